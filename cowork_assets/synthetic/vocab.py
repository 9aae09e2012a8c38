"""Word pools for the synthetic workspace. Plain data."""

FIRST = (
    "Ana Ben Carla Dev Elena Farid Grace Hiro Ines Jonas Kemi Liam Maya Nils Olga Pedro Quinn Rosa "
    "Sami Tara Uma Victor Wen Xavi Yara Zoe Amir Bianca Chen Dara Emil Fatima Gus Hana Ivan Jade"
).split()
LAST = (
    "Lopez Smith Okafor Tanaka Novak Rossi Haddad Silva Kowalski Nguyen Berg Moreau Fischer Costa Ali "
    "Jensen Park Ivanova Mensah Dubois Garcia Kim Patel Larsen Cohen Romero Sato Weber Eze Horvat"
).split()
COMPANIES = (
    "Northwind Contoso Globex Initech Umbrella Hooli Vandelay Stark Wayne Acme Soylent Tyrell "
    "Cyberdyne Wonka Oscorp Pied-Piper Massive-Dynamic Aperture"
).split()
TITLES = (
    "Account Manager,Product Lead,Finance Analyst,Engineer,Designer,Recruiter,Legal Counsel,"
    "Operations Lead,Sales Director,Data Scientist,Office Manager,CFO"
).split(",")
CITIES = "Lisbon Austin Osaka Lagos Berlin Toronto Lyon Seoul Denver Porto Nairobi Oslo Perth Quito".split()
MERCHANTS = (
    "Delta Air Lines,Hilton Garden Inn,Uber,Staples,Blue Bottle Coffee,AWS,Zoom,WeWork,Amtrak,"
    "Marriott,Lyft,Office Depot,FedEx,Adobe,Slack,Hertz,Le Pain Quotidien,Figma,GitHub,Dell"
).split(",")
EXPENSE_CATEGORIES = "travel,lodging,meals,software,hardware,office supplies,shipping,training".split(",")
VENDORS = "Zappos,Best Buy,IKEA,Newegg,B&H Photo,REI,Crate & Barrel,Warby Parker,Allbirds,Muji".split(",")
PROJECTS = (
    "Q3 report,launch plan,hiring pipeline,vendor audit,budget review,board deck,onboarding guide,"
    "security review,pricing update,roadmap,customer survey,offsite agenda"
).split(",")
TODO_VERBS = ("Draft,Review,Send,Update,Schedule,Collect,Summarize,Prepare,Check,Finalize,Share,Book").split(",")
TODO_OBJECTS = (
    "the budget table,speaker notes,the risk log,customer quotes,the timeline,travel options,"
    "the slide deck,meeting minutes,the KPI sheet,feedback notes,the contract draft,"
    "the FAQ section,the demo script,the hiring plan,the vendor list,action items"
).split(",")
MONTHS = ("January February March April May June July August September October November December").split()
WORDS = (
    "please note that the team agreed to revisit this after the quarterly sync and will follow up with "
    "updated numbers once finance confirms the allocation the customer asked for a short summary before "
    "friday while legal reviews the remaining clauses everyone should double check the shared folder "
    "for the latest version and flag anything that looks out of date the schedule may shift depending "
    "on travel approvals and room availability we also discussed moving the review to the second week "
    "of the month so that the regional leads can join remotely"
).split()
OPENERS = (
    "Let me,I'll,First I'll,I will,Next, I'll,Now I'll,To do that I'll,Okay — I'll,Sure, I'll,"
    "Alright, let me,Good idea; I'll,Before anything else I'll"
).split(",")
LOOKUP_VERBS = "look up,search for,find,check,pull up,locate,query".split(",")
CLOSERS = (
    "All set.,Done.,That's taken care of.,Everything is in place.,Finished.,Completed.,"
    "That should cover it.,You're all set.,Let me know if you need anything else.,"
    "Happy to help with anything else."
).split(",")
ASIDES = (
    "so nothing gets mixed up,to be sure I pick the right record,since several entries look similar,"
    "to confirm the details,because the names overlap,before making any change,"
    "to avoid acting on stale data,so the request is handled exactly,to match what you asked,"
    "given there may be more than one match"
).split(",")
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
