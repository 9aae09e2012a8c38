"""Credentials in what a dataset publishes: found, and replaced by a typed placeholder (`<REDACTED:aws_access_key>`).

The detector is `detect-secrets` (Yelp's maintained plugin set, pure Python, offline): its provider-token plugins
(AWS, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, npm, PyPI, Azure, Discord, Telegram, Square, Mailchimp,
Artifactory, OpenAI's classic keys, passwords in URLs except to hosts reserved for examples such as example.com).
Its keyword, high-entropy and IP plugins are left out: in agent logs they fire on commit hashes, ids and addresses,
which are what graders check. In their place, rules written for what agents print (docs/datasets.md, Secrets):
whole private-key blocks, whole JWTs, newer key formats the plugins lack, Vault tokens, a value after a name that says
secret whatever its entropy unless it is a reference or a stand-in, Authorization headers, URL passwords with any
character RFC 3986 allows; texts with JSON or shell escapes are also searched unescaped (`find_written`).

A secret found in any text of a trajectory is replaced wherever it occurs in that trajectory. Texts are first
screened together (polars, one regular expression); only the few that may hold a secret are searched one by one.
An allow-list of regular expressions (setting `secret_allowlist`) exempts values a user knows are not secrets (a
documented example key)."""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

import orjson
import polars as pl

PLACEHOLDER = "<REDACTED:{}>"
# detect-secrets plugins not used (see above): keyword, entropy and IP plugins, and those redone here.
LEFT_OUT = (
    "KeywordDetector",
    "Base64HighEntropyString",
    "HexHighEntropyString",
    "IPPublicDetector",
    "JwtTokenDetector",
    "PrivateKeyDetector",
    "CloudantDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "SoftlayerDetector",
)
OWN = {
    "private_key": (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)"
    ),
    "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "openai_api_key": r"\bsk-(?:proj-|svcacct-|admin-)[A-Za-z0-9_-]{20,}|\bsk-[A-Za-z0-9]{48}\b",
    "anthropic_api_key": r"\bsk-ant-[A-Za-z0-9_-]{20,}",
    "google_api_key": r"\bAIza[0-9A-Za-z_-]{35}",
    "github_token": r"\bgithub_pat_[A-Za-z0-9_]{40,}",
    "huggingface_token": r"\bhf_[A-Za-z0-9]{30,}",
    # Providers' documented token formats, each a prefix and a length no identifier or hash has by chance.
    "api_key": r"\bsk-[a-f0-9]{32}\b",  # DeepSeek, Moonshot, DashScope
    "openrouter_api_key": r"\bsk-or-v1-[a-f0-9]{64}\b",
    "groq_api_key": r"\bgsk_[A-Za-z0-9]{52}\b",
    "xai_api_key": r"\bxai-[A-Za-z0-9]{80}\b",
    "perplexity_api_key": r"\bpplx-[A-Za-z0-9]{48}\b",
    "replicate_token": r"\br8_[A-Za-z0-9]{37}\b",
    "langsmith_api_key": r"\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b",
    "tavily_api_key": r"\btvly-(?:dev-|prod-)?[A-Za-z0-9]{32}\b",
    "firecrawl_api_key": r"\bfc-[a-f0-9]{32}\b",
    "npm_token": r"\bnpm_[A-Za-z0-9]{36}\b",
    "shopify_token": r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
    "digitalocean_token": r"\bdo[opr]_v1_[a-f0-9]{64}\b",
    "databricks_token": r"\bdapi[a-f0-9]{32}(?:-\d)?\b",
    "doppler_token": r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,44}\b",
    "linear_api_key": r"\blin_api_[A-Za-z0-9]{40}\b",
    "notion_token": r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b|\bsecret_[A-Za-z0-9]{43}\b",
    "atlassian_api_token": r"\bATATT3[A-Za-z0-9_=-]{180,}",
    "sentry_token": r"\bsntr[ysu]_[A-Za-z0-9+/=_]{40,}",
    "mailgun_api_key": r"\bkey-[a-f0-9]{32}\b",
    "slack_token": r"\bxapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{64}\b",  # app-level tokens (the plugin has the others)
    "google_oauth_token": r"\bya29\.[0-9A-Za-z_-]{30,}",
    "age_secret_key": r"\bAGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}\b",
    "grafana_token": r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,400}={0,2}",
    "postman_api_key": r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b",
    "supabase_token": r"\bsbp_[a-f0-9]{40}\b|\bsb_secret_[A-Za-z0-9_-]{31,}",
    "pulumi_token": r"\bpul-[a-f0-9]{40}\b",
    "fly_token": r"\bfo1_[A-Za-z0-9_-]{43}\b|\bfm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}",
    "terraform_token": r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}\b",
    "mapbox_secret_token": r"\bsk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}",
    # A webhook URL is its own credential: whoever has it posts as the hook.
    "discord_webhook": r"\bhttps://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}",
    # A signed URL's signature or session token: whoever holds the URL has the access it grants.
    "url_signature": r"(?i)[?&](?:sig|x-amz-signature|x-amz-security-token|x-goog-signature)=([A-Za-z0-9%+/=._-]{16,})",
}
# The screen's form of a rule that starts with a class of characters: a literal it must hold. Led by the class, it
# alone made the screen scan every character of every text (the whole screen took twice as long).
SCREEN_OF = {"terraform_token": r"\.atlasv1\."}
# A value the text calls secret with a bearer scheme alone: it is one when it looks random (long, mixed, high entropy).
CONTEXT = {"bearer_token": r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{16,})"}
# Rules for what agents print, each a secret whatever its entropy (people's passwords are words) unless its value is a
# reference (`_reference`): a value after a name that says it is secret (`.env` lines, YAML, JSON keys, keyword
# arguments), a credential in an Authorization header, the password of a URL's userinfo (RFC 3986: any unreserved,
# percent-encoded or sub-delim character), and Vault tokens.
SECRET_NAME = (
    r"password|passwd|pwd|passphrase|secret|token|credentials?|api[_-]?key|apikey|access[_-]?key|secret[_-]?key"
    r"|private[_-]?key|auth[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key"
)
NAMED = re.compile(
    r"(?i)(?<![\w.-])[\w.-]*?(?:" + SECRET_NAME + r")(?:\\*[\"'])?[ \t]*(?<![=!<>])[:=](?!=)[ \t]*(?:\\*([\"']))?"
)
HEADER = re.compile(
    r"(?i)\bauthorization(?:\\*[\"'])?\s*[:=]\s*(?:\\*[\"'])?\s*(?:basic|bearer|token|digest)\s+([^\s\"'\\,;]{8,})"
)
URL_PASSWORD = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@?#\"'<>]*:([^\s/@?#\"'<>]+)@(?=[^\s/@])")
VAULT = re.compile(r"\bhv[sbr]\.[A-Za-z0-9_-]{20,}")
# A password or token given on a command line: `curl -u user:<pw>`, `sshpass -p <pw>`, `mysql -p<pw>` (attached: `-p`
# alone prompts), `--password <pw>`, `--token <t>` (`--password=<pw>` is a name that says secret), `docker login -p
# <pw>`, `redis-cli -a <pw>`, `htpasswd -b <file> <user> <pw>`, `wandb login <key>`.
COMMAND_LINE = (
    re.compile(r"\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t]*['\"]?[^\s:'\"]+:([^\s'\"]+)"),
    re.compile(r"\bsshpass[ \t]+-p[ \t]*['\"]?([^\s'\"]+)"),
    re.compile(r"\bmysql(?:dump|admin)?\b[^\n]*?[ \t]-p([^\s'\"-][^\s'\"]*)"),
    re.compile(
        r"(?i)(?<![\w-])--(?:password|passwd|token|api-?key|secret|access-key|secret-key|auth-token)[ \t]+['\"]?"
        r"([^\s'\"]+)"
    ),
    re.compile(r"\bdocker\b[^\n]*?\blogin\b[^\n]*?[ \t]-p[ \t]*['\"]?([^\s'\"-][^\s'\"]*)"),
    re.compile(r"\bredis-cli\b[^\n]*?[ \t]-a[ \t]+['\"]?([^\s'\"]+)"),
    re.compile(r"\bhtpasswd[ \t]+-[a-zA-Z]*b[a-zA-Z]*[ \t]+\S+[ \t]+\S+[ \t]+['\"]?([^\s'\"]+)"),
    re.compile(r"\bwandb[ \t]+login[ \t]+(?:--\S+[ \t]+)*([a-f0-9]{40})\b"),
)
NETRC = re.compile(r"\bmachine[ \t]+\S+\s+(?:login[ \t]+\S+\s+)?password[ \t]+(\S+)")  # a `.netrc` entry
SCREEN = (  # the rules above in Rust syntax (no look-arounds): every text they find a secret in matches
    r"(?i)(?:" + SECRET_NAME + r")\\*[\"']?[ \t]*[:=]",
    r"(?i)authorization",
    r"://[^\s:/@]*:[^\s/@]+@",
    r"hv[sbr]\.",
    r"[ \t](?:-u|--user)[ \t]*['\"]?[^\s:'\"]+:",
    r"sshpass",
    r"mysql[^\n]*[ \t]-p[^\s'\"-]",
    r"(?i)--(?:password|passwd|token|api-?key|secret|access-key|secret-key|auth-token)[ \t]",
    r"docker[^\n]*login",
    r"redis-cli",
    r"htpasswd",
    r"wandb[ \t]+login",
    r"machine[ \t]+\S+\s+(?:login[ \t]+\S+\s+)?password[ \t]",
)
PASSWORD = re.compile(r"(?i)pass(?:word|wd|phrase)")
UNQUOTED_VALUE = re.compile(r"[^\s\"',;)}\]]+")
MIN_NAMED = 6  # characters of a value called secret (shorter ones are mostly flags, units, `str`)
PLACEHOLDERS = frozenset(
    "none null nil true false undefined str string int bool bytes any optional required yes no redacted hidden "
    "password passwd secret token changeit xxx xxxx xxxxxx".split()
)
# A reference to a secret, not one: a variable or placeholder, a call or an index, a path, an attribute path, a
# constant's or a variable's name (`$DB_PASSWORD`, `getpass()`, `/run/secrets/db`, `settings.CLIENT_SECRET`,
# `API_KEY`, `user_password`).
REFERENCE = re.compile(
    r"^(?:[$%{<*]|~?/|\.\.?/|[A-Za-z]:\\)|[(\[]|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"
    r"|^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$|^[a-z]+(?:[A-Z][a-z0-9]*)+$|^x{3,}$|^\*+$|^\.{3}$"
)
# A value that says it stands in for a secret (a test fixture's, a documentation's): `test-secret-key`,
# `yourpassword`, `dummy-token`, `my-key`.
DUMMY = re.compile(r"(?i)test|dummy|fake|example|sample|placeholder|your|mock|^my[-_]|changeme|redacted")
BOUNDARY = " \t\r\n=:\"'"
# Hosts reserved for documentation and tests (RFC 2606, RFC 6761): a password in a URL to one is an example
# (`http://user:pass@example.com` in a test suite), not a credential.
EXAMPLE_HOST = re.compile(r"(?i)(?:[\w-]+\.)*(?:example\.(?:com|net|org)|[\w-]+\.(?:example|test|invalid))(?![\w.-])")
MIN_ENTROPY = 3.2  # bits per character of a value called secret (a random 16-character key has ~3.5-4)
# A text longer than LARGE_TEXT (a 50 MB tool output) is searched a part at a time, only the parts the screen
# passes: parts of PART characters, each overlapping the next by OVERLAP, longer than a secret (a private key block
# of 8,192 bits is ~6.5 KB). Searched whole, its Python patterns took 1.7 s and its unescaped copy 140 MB a megabyte.
LARGE_TEXT, PART, OVERLAP = 1 << 20, 1 << 16, 1 << 14


def readable(text: str) -> str:
    """The text a secret is sought in: JSON text as its string values, one per line, each after the key it is under
    (`password: ...`: the key is what may say the value is secret), escapes undone; any other text as written."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    return "\n".join(_strings(value)) if isinstance(value, (dict, list, str)) else text


def _strings(value, key: str | None = None) -> list[str]:
    if isinstance(value, str):
        return [value if key is None else f"{key}: {value}"]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, k)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, key)]
    return []


def _kind(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")


@cache
def _plugin_patterns() -> tuple[tuple[str, re.Pattern], ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    return tuple(
        (_kind(secret_type), pattern)
        for secret_type, plugin in sorted(get_mapping_from_secret_type_to_class().items())
        if issubclass(plugin, RegexBasedDetector) and plugin.__name__ not in LEFT_OUT
        for pattern in plugin.denylist
    )


def _secret(match: re.Match) -> str:
    """The secret a plugin's match holds: its value group when the match begins before it (`://user:<pw>@`), else
    the whole match (a group that starts it is the token's prefix: `(ghp|gho)_...`)."""
    group = next((i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)), None)
    return match.group(group) if group and match.start(group) > match.start(0) else match.group(0)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _random(value: str) -> bool:
    return (
        len(value) >= 12
        and _entropy(value) >= MIN_ENTROPY
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


def _reference(value: str) -> bool:
    """Whether a value after a name that says secret refers to one, or stands in for one, rather than being one
    (`REFERENCE`, `PLACEHOLDERS`, `DUMMY`)."""
    return value.lower() in PLACEHOLDERS or bool(REFERENCE.search(value) or DUMMY.search(value))


ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\(.)", re.S)
JSON_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def unescaped(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text with its JSON and shell escapes undone, and for each of its characters the span of `text` it was."""
    out, spans, at = [], [], 0
    for match in ESCAPE.finditer(text):
        out += text[at : match.start()]
        spans += [(i, i + 1) for i in range(at, match.start())]
        code, char = match.groups()
        out.append(chr(int(code, 16)) if code else JSON_ESCAPES.get(char, char))
        spans.append(match.span())
        at = match.end()
    out += text[at:]
    spans += [(i, i + 1) for i in range(at, len(text))]
    return "".join(out), spans


def _ascii_boundaries(pattern: str) -> str:
    """`pattern` with each word boundary `\\b` made ASCII, `(?-u:\\b)`. A Unicode boundary sends Rust's regex engine
    from its DFA to a slower one (7x on JSON text); every `\\b` here sits beside an ASCII letter or digit of the
    pattern, where an ASCII boundary is found wherever a Unicode one is, so the screen still passes every secret."""
    return re.sub(r"\\(.)", lambda m: r"(?-u:\b)" if m.group(1) == "b" else m.group(0), pattern, flags=re.S)


@dataclass
class Detector:
    """Finds secrets in texts; `allow`: regular expressions of values that are not secrets."""

    allow: tuple[str, ...] = ()
    _allow: list[re.Pattern] = field(init=False, repr=False)

    def __post_init__(self):
        self._allow = [re.compile(p) for p in self.allow]
        self._own = [(k, re.compile(p)) for k, p in OWN.items()]
        self._context = [(k, re.compile(p)) for k, p in CONTEXT.items()]

    @property
    def screen(self) -> str:
        """One Rust-syntax regular expression every text holding a secret matches (and a few others do)."""
        plugin = [re.sub(r"\(\?!\\w\)", "", p.pattern) for _, p in _plugin_patterns()]  # lookaheads: not in Rust
        own = [SCREEN_OF.get(kind, pattern) for kind, pattern in OWN.items()]
        patterns = [*plugin, *own, *CONTEXT.values(), *SCREEN]
        return "|".join(f"(?:{_ascii_boundaries(p)})" for p in patterns)

    def find(self, text: str) -> dict[str, str]:
        """secret -> its kind, for every secret in `text`."""
        found: dict[str, str] = {}
        for kind, pattern in (*_plugin_patterns(), *self._own):
            for match in pattern.finditer(text):
                if match.group(0).endswith("@") and EXAMPLE_HOST.match(text, match.end()):
                    continue  # a URL's password at an example host
                secret = _secret(match).strip(BOUNDARY)  # some plugins match the space or quote around a key
                if secret:
                    found.setdefault(secret, kind)
        for kind, value in self._agent_rules(text):
            named = kind == "credential_assignment"
            if not (named and _reference(value)) and not any(value in s for s in found):
                found.setdefault(value, kind)
        for kind, pattern in self._context:
            for match in pattern.finditer(text):
                if _random(match.group(1)) and not any(match.group(1) in s for s in found):
                    found.setdefault(match.group(1), kind)
        return {s: k for s, k in found.items() if not any(a.fullmatch(s) for a in self._allow)}

    def _agent_rules(self, text: str):
        """(kind, value) of every value the rules for agent logs (`VAULT`, `HEADER`, `URL_PASSWORD`, `COMMAND_LINE`,
        `NETRC`, `NAMED`) find."""
        for match in VAULT.finditer(text):
            yield "vault_token", match.group(0)
        for match in HEADER.finditer(text):
            if not _reference(match.group(1)):
                yield "authorization_header", match.group(1)
        for match in URL_PASSWORD.finditer(text):
            if not EXAMPLE_HOST.match(text, match.end()) and not _reference(match.group(1)):
                yield "url_password", match.group(1)
        for pattern in COMMAND_LINE:
            for match in pattern.finditer(text):
                if len(match.group(1)) >= MIN_NAMED and not _reference(match.group(1)):
                    yield "command_line_credential", match.group(1)
        for match in NETRC.finditer(text):
            if not _reference(match.group(1)):
                yield "netrc_password", match.group(1)
        for match in NAMED.finditer(text):
            quote, at = match.group(1), match.end()
            if quote and text[match.start() - 1 : match.start()] == quote and match.group(0).count(quote) == 1:
                continue  # a label its string ends (`"Password: "`), the quote closing it: no value follows
            if quote:
                end = text.find(quote, at)
                value = text[at:end] if end > at and "\n" not in text[at:end] else ""
                value = value.rstrip("\\")  # the escaped closing quote of JSON inside a JSON string
                # A quoted literal set with spaces around its `=` or `:` is code (`api_key = 'x'`, `{apiKey: 'x'}`):
                # it is a secret when it looks random, or when the name says password. Shell and .env lines
                # (`PASSWORD="..."`) and JSON (read as `key: value`) say it whatever it looks like.
                spaced = (
                    match.group(0).rstrip("\\\"'")[-1:].isspace() or " =" in match.group(0) or " :" in match.group(0)
                )
                if spaced and not (_random(value) or PASSWORD.search(match.group(0))):
                    continue
            else:
                found = UNQUOTED_VALUE.match(text, at)
                value = found.group(0) if found else ""
            if len(value) >= MIN_NAMED:
                yield "credential_assignment", value

    def find_written(self, text: str) -> dict[str, str]:
        """`find` over a text as a log holds it: JSON text read as its string values (`readable`), and a text with
        JSON or shell escapes (`\\/`, `\\u0041`, `\\$`; a truncated JSON result no longer parses) read unescaped; a
        secret the text holds escaped is given as written too, so that replacing it replaces what is there. A text
        longer than LARGE_TEXT is searched in the parts of it the screen passes, each as a text of its own; a secret
        cut by a part's end is found whole in the next, and what the cut left of it is not kept."""
        if len(text) <= LARGE_TEXT:
            return self._written(text)
        step = PART - OVERLAP
        parts = pl.Series([text[at : at + PART] for at in range(0, len(text) - OVERLAP, step)], dtype=pl.String)
        found: dict[str, str] = {}
        for part in parts.filter(self.candidates(parts)).to_list():
            for secret, kind in self._written(part).items():
                found.setdefault(secret, kind)
        return {s: k for s, k in found.items() if not any(s in other and s != other for other in found)}

    def _written(self, text: str) -> dict[str, str]:
        found = self.find(readable(text))
        if "\\" not in text:
            return found
        plain, spans = unescaped(text)
        for secret, kind in self.find(plain).items():
            found.setdefault(secret, kind)
        for secret, kind in list(found.items()):
            if secret not in text:
                at = plain.find(secret)
                while at >= 0:
                    found.setdefault(text[spans[at][0] : spans[at + len(secret) - 1][1]], kind)
                    at = plain.find(secret, at + 1)
        return found

    def candidates(self, texts: pl.Series) -> pl.Series:
        """Which of `texts` may hold a secret (the screen), as one vectorised pass: a query, which polars spreads
        over the cores (an eager `str.contains` runs on one)."""
        screened = pl.first().fill_null("").str.contains(self.screen)
        return texts.to_frame().lazy().select(screened).collect().to_series()

    def find_all(self, texts: Iterable[str | None]) -> dict[str, str]:
        """secret -> kind over many texts (those the screen passes are searched)."""
        series = pl.Series(list(texts), dtype=pl.String)
        found: dict[str, str] = {}
        for text in series.filter(self.candidates(series)).to_list():
            for secret, kind in self.find_written(text).items():
                found.setdefault(secret, kind)
        return found


def redact(text: str | None, secrets: dict[str, str]) -> str | None:
    """`text` with every occurrence of each secret replaced by its placeholder (longest first)."""
    if not text or not secrets:
        return text
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, PLACEHOLDER.format(secrets[secret]))
    return text


def growth(secrets: dict[str, str]) -> int:
    """The most a text can grow per occurrence of its secrets when they are replaced."""
    return max((len(PLACEHOLDER.format(k)) - len(s) for s, k in secrets.items()), default=0)


def digest(secret: str) -> str:
    """What the redactions table keeps of a secret: a hash, never the text."""
    return hashlib.sha256(secret.encode()).hexdigest()[:16]
