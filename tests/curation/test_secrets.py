"""Credentials never reach a published file: each kind found and replaced by its placeholder, the values graders
check (ids, hashes, codes) left alone, an evidence item that is a secret flagged, and a synthetic corpus with
planted credentials published and exported without one of them."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import polars as pl
import pytest

from cowork_assets.curation import redact as redaction
from cowork_assets.curation.secrets import Detector, readable, redact

HELD = "Xk9mP2qL7vR4tZ8w"  # a password a JSON object holds under its key
# One planted credential of each kind (shapes of real ones, made up here), and the kind its placeholder names.
PLANTED = {
    "AKIAQYLPMN5HHHFPZAM2": "aws_access_key",
    "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789": "github_token",
    "sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678Stu901": "openai_api_key",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx": "slack_token",
    "AIzaSyD-1234567890abcdefghijklmnopqrstu": "google_api_key",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U": "jwt",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7vN2kq8\nq9Zr4L==\n-----END RSA PRIVATE KEY-----": "private_key",
    HELD: "credential_assignment",
    "S3cr3tPassw0rdQ7": "basic_auth_credentials",  # in a connection string
    # What agents print that looks like nothing in particular: passwords people chose, generic tokens, headers
    "correcthorsebatterystaple": "credential_assignment",
    "Summer2024!": "credential_assignment",
    "9a8b7c6d5e4f30211203f4e5d6c7b8a9f0e1d2c3": "credential_assignment",
    "hvs.CAESIJlU9JMYEhOPYv4igdhm9PnZDrabHJkQ": "vault_token",
    "YWRtaW46aHVudGVyMjAyNA==": "authorization_header",
    "Tr0ub4dor&3xQ": "url_password",  # RFC 3986 sub-delims in a URL's password
    "r3disOnlyPassw0rd": "url_password",  # a URL with a password and no user
    # Providers' token formats the plugins lack
    "sk-3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e": "api_key",
    "sk-or-v1-" + "7c4e1a9f3b5d2e8c" * 4: "openrouter_api_key",
    "gsk_" + "Wq3ZrT8yKp2LmN5vBx7Hc4Jd9Fs6Ga1Re0Ut3Yi8Oo2Pl5Mk7Nj4": "groq_api_key",
    "xai-" + "Zr8Tq3Wm5Kp1Lx7Nc9Vb2Hj4Gf6Ds0Ae3Ry8Ut5Io1Pl7Mk9Nj2Bh4Gv6Fc0Dx3Sz8Qa5Wm1Ek7Rt9Yu": "xai_api_key",
    "npm_" + "Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5": "npm_token",
    "shpat_" + "0f1e2d3c4b5a69788796a5b4c3d2e1f0": "shopify_token",
    "dop_v1_" + "4b8e2f6a1c9d3e7f" * 4: "digitalocean_token",
    "dapi" + "9c1e5a7b3d2f4e6a8b0c1d3e5f7a9b2c": "databricks_token",
    "lin_api_" + "Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz1Xc3Vb5Nm7Q": "linear_api_key",
    "lsv2_pt_" + "8f2c4e6a0b1d3f5e7a9c2b4d6f8e0a1c" + "_" + "3e5a7c9b1d": "langsmith_api_key",
    "ya29.a0AfB_byC" + "Kq8Zr2Tw5Ym1Lp7Nx3Vc9Bh4Gj6Fd0Sa": "google_oauth_token",
    "AGE-SECRET-KEY-1" + "QYZ7X3P9L2G4T8C6M5N0R2S7W9E3H6J8K4D5F0U2A7V9L3Z8Y6X5C4Q2W7": "age_secret_key",
    "Zk8qR2vT5wX9yB3nM6pL1cF4hJ7dG0sA%2BeQ%3D": "url_signature",  # a signed URL's signature
    # A password on a command line
    "Sup3rS3cretPw": "command_line_credential",
    "Mysq1RootPw9": "command_line_credential",
    "SshP4ssw0rd77": "command_line_credential",
    "Cl1T0kenValue42": "command_line_credential",
    "D0ckerHubPw88": "command_line_credential",
    "R3disAuthPw55": "command_line_credential",
    "HtP4sswdAdmin": "command_line_credential",
    "3e9b1c7a5f2d4e6b8a0c9d1e3f5a7b2c4d6e8f0a": "command_line_credential",  # wandb login
    "N3trcSecretPw": "netrc_password",
    # More providers' token formats
    "glsa_" + "Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz1Xc" + "_" + "3e5a7c9b": "grafana_token",
    "PMAK-" + "64a1b2c3d4e5f6a7b8c9d0e1" + "-" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0f9": "postman_api_key",
    "sbp_" + "4b8e2f6a1c9d3e7f" * 2 + "0a1b2c3d": "supabase_token",
    "pul-" + "7c4e1a9f3b5d2e8c" * 2 + "5e6f7a8b": "pulumi_token",
    "fo1_" + "Zr8Tq3Wm5Kp1Lx7Nc9Vb2Hj4Gf6Ds0Ae3Ry8Ut5Io1P": "fly_token",
    "Kp3mZ9qR2vT8wX.atlasv1." + "Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz1Xc3Vb5Nm7Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk": "terraform_token",
    "sk.eyJ1IjoiYWNtZS1vcHMiLCJhIjoiY2x4eXoxMjM0In0.Zq8vR2mK9xT4wY7pLs3NbQ": "mapbox_secret_token",
    "7012345678:AAF" + "Zq8vR2mK9xT4wY7pLs3NbQ1cF4hJ7dG0": "telegram_bot_token",
    "https://discord.com/api/webhooks/1056478965432165432/"
    + "Zq8vR2mK9xT4wY7pLs3NbQ1cF4hJ7dG0sAeR5tY6uI7oP8aS9dF0gH1jK2lZ3xC4vB5nM6qW7e": "discord_webhook",
}
CONTEXT = {
    "S3cr3tPassw0rdQ7": "postgres://admin:{}@db.internal:5432/app",
    HELD: '{{"db": {{"host": "db.internal", "password": "{}"}}}}',
    "correcthorsebatterystaple": "POSTGRES_PASSWORD={}",
    "Summer2024!": 'export ADMIN_PASSWORD="{}"',
    "9a8b7c6d5e4f30211203f4e5d6c7b8a9f0e1d2c3": "CIRCLECI_TOKEN={}",
    "hvs.CAESIJlU9JMYEhOPYv4igdhm9PnZDrabHJkQ": "VAULT_TOKEN={}",
    "YWRtaW46aHVudGVyMjAyNA==": 'curl -H "Authorization: Basic {}" https://ci.acme.io/api',
    "Tr0ub4dor&3xQ": "postgres://admin:{}@db.prod.acme.io:5432/prod",
    "r3disOnlyPassw0rd": "redis-cli -u redis://:{}@cache.internal:6379/0 ping",
    "Zk8qR2vT5wX9yB3nM6pL1cF4hJ7dG0sA%2BeQ%3D": "GET https://acct.blob.core.windows.net/c/a.csv?sv=2022-11-02&sr=b&sig={}",
    "Sup3rS3cretPw": "curl -sS -u admin:{} https://jenkins.internal/api/json",
    "Mysq1RootPw9": "mysql -h db -u root -p{} shop < dump.sql",
    "SshP4ssw0rd77": "sshpass -p '{}' ssh deploy@10.0.0.4",
    "Cl1T0kenValue42": "vault login --token {} --no-print",
    "D0ckerHubPw88": "docker login -u deploy -p {} registry.acme.io",
    "R3disAuthPw55": "redis-cli -h cache.internal -a '{}' ping",
    "HtP4sswdAdmin": "htpasswd -bc /etc/nginx/.htpasswd admin {}",
    "3e9b1c7a5f2d4e6b8a0c9d1e3f5a7b2c4d6e8f0a": "wandb login {}",
    "N3trcSecretPw": "machine api.heroku.com\n  login ops@acme.io\n  password {}",
    "7012345678:AAFZq8vR2mK9xT4wY7pLs3NbQ1cF4hJ7dG0": "curl -s https://api.telegram.org/bot{}/getMe",
}
# Values graders check, which look random too: never touched.
BENIGN = [
    "commit 3f2a9c1b7e4d5a6b8c9d0e1f2a3b4c5d6e7f8091",
    "order #W2378156 for user_id=james_lee_6136, reservation XEWRD9",
    "request 550e8400-e29b-41d4-a716-446655440000 took 35 ms",
    "the password field is required; see docs/api_key.md",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "URLValidator()('http://user:pass@example.com'); db = 'postgres://u:Pa55w0rd9@db.test:5432/x'",  # examples
]


def _in_text(secret: str, shown: str | None = None) -> str:
    """The secret as a log shows it (in its connection string, ...), or `shown` in its place."""
    return CONTEXT.get(secret, "{}").format(shown or secret)


@pytest.mark.parametrize("secret, kind", PLANTED.items(), ids=list(PLANTED.values()))
def test_each_kind_is_found_and_replaced_by_its_placeholder(secret, kind):
    text = f"deploy log:\n{_in_text(secret)}\nend"
    found = Detector().find(text)
    assert found == {secret: kind}
    assert redact(text, found) == f"deploy log:\n{_in_text(secret, f'<REDACTED:{kind}>')}\nend"
    assert Detector().candidates(pl.Series([text])).to_list() == [True]  # the screen lets it through


# Letters, digits and marks of other scripts, and non-ASCII spaces: where Unicode and ASCII word boundaries differ.
NEIGHBOURS = ["", " ", "_", "é", "ß", "日", "\u00a0", "\u2003", "К", "1"]


@pytest.mark.parametrize("secret", PLANTED, ids=list(PLANTED.values()))
def test_the_screen_passes_every_text_in_which_a_secret_is_found_whatever_surrounds_it(secret):
    texts = [f"{before}{_in_text(secret)}{after}" for before in NEIGHBOURS for after in NEIGHBOURS]
    texts += [f"token: {before}Bearer Zq8vR2mK9xT4wY7p{after}" for before in NEIGHBOURS for after in NEIGHBOURS]
    found = [bool(Detector().find(text)) for text in texts]
    passed = Detector().candidates(pl.Series(texts)).to_list()
    assert found[0] and found[len(NEIGHBOURS) ** 2]  # the secret alone, and the bearer token alone, are found
    assert [t for t, f, p in zip(texts, found, passed) if f and not p] == []


# JSON text holding a credential under a key that says it is secret, as tool results, call arguments and task states
# hold them: nested, in a list, compact, and as JSON text inside a JSON string (its quotes escaped).
HOLDERS = [
    json.dumps({"db": {"host": "db.internal", "password": HELD}}),
    json.dumps([{"name": "deploy", "env": {"CLIENT_SECRET": HELD}}]),
    orjson.dumps({"auth_token": HELD}).decode(),
    json.dumps({"status": 200, "body": json.dumps({"api_key": HELD})}),
]


@pytest.mark.parametrize("text", HOLDERS, ids=["nested", "in a list", "compact", "JSON in a JSON string"])
def test_a_credential_json_text_holds_under_its_key_is_found_and_replaced_wherever_it_is(text):
    """JSON text is read as its string values, each after its key (the key is what says the value is secret), its
    escapes undone. The screen passes the text as written; messages, call arguments and task packages lose it."""
    detector = Detector()
    assert detector.candidates(pl.Series([text])).to_list() == [True]
    assert detector.find(readable(text)) == {HELD: "credential_assignment"}
    call = {"id": "c1", "name": "deploy", "arguments": text}
    messages = pl.DataFrame(
        [{"trajectory_id": "t1", "content": text, "reasoning_content": None, "tool_calls": [call]}],
        schema={**{c: pl.String for c in ("trajectory_id", "content", "reasoning_content")}, "tool_calls": None},
    )
    found = redaction.find(messages, detector)
    assert found.rows() == [("t1", HELD, "credential_assignment")]
    curated = messages.with_columns(message_index=pl.lit(0, pl.Int32), chars=pl.lit(len(text) * 2, pl.Int64))
    replaced, _ = redaction.apply(curated, found, "b")
    assert HELD not in replaced["content"][0] and HELD not in replaced["tool_calls"][0][0]["arguments"]
    placeholder = "<REDACTED:credential_assignment>"
    state = redaction.rows(pl.DataFrame({"state": [text]}), [], ["state"], detector)["state"][0]
    assert HELD not in state and placeholder in readable(state)
    assert readable(state) == readable(text).replace(HELD, placeholder)  # nothing else changed


def test_values_graders_check_are_not_secrets_and_an_allow_list_exempts_a_known_example():
    assert Detector().find("\n".join(BENIGN)) == {}
    settings = {"password_policy": "at least 12 characters", "pwd": "/home/agent/project", "token_type": "bearer"}
    assert Detector().find(readable(json.dumps(settings))) == {}  # keys that say secret, values that are not
    assert Detector().find(readable(json.dumps({"secret": "hunter2"}))) == {"hunter2": "credential_assignment"}
    example = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key
    assert Detector().find(f"key {example}") == {example: "aws_access_key"}
    assert Detector(("AKIA[A-Z0-9]+EXAMPLE",)).find(f"key {example}") == {}


# Code an agent reads and writes, where a name says secret and the value refers to one (a setting, a call, a path,
# a variable, a test fixture's stand-in): published as it is.
CODE = [
    "client_secret=settings.OAUTH2_CLIENT_SECRET",
    "secret = base64.b64encode(data).decode()",
    "pwd: /workspace/django__django-11099",
    "PWD=/tmp/pytest-of-root/pytest-0/test_x0",
    "access_key=boto3.client('s3')",
    "token = self._get_token()",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "password: str",
    "secret_key: Optional[str] = None",
    "if token == expected_token:",
    "const csrfToken = document.querySelector('meta[name=csrf]').content;",
    'headers = {"X-CSRFToken": csrfToken}',
    "def login(user, password=DEFAULT_PASSWORD):",
    "SECRET_KEY='test-secret-key'",
    "env.OPENAI_API_KEY = 'proxy-handled';",
    '"max_tokens": 4096, "token_count": 118',
    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user',
    "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
    "export GITHUB_TOKEN=$(gh auth token)",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    'password="yourpassword", database="yourdatabase"',
    'curl -u "$JIRA_USER:$JIRA_TOKEN" https://jira.internal/rest/api/2/myself',
    "mysql -u root -p${MYSQL_ROOT_PASSWORD} -e 'show databases'",
    "mysql -u root -p shop",  # -p alone: mysql asks
    'sshpass -p "$SSHPASS" ssh deploy@host',
    "docker login --password-stdin -u ci registry.internal",
    "mkdir -pv build/out && curl -sSL https://get.acme.io/install.sh | sh",
    "gh auth login --token $GH_TOKEN",
    'expect "password:"; send "$env(PW)\\r"',  # a prompt's label, its string closed after the colon
    'print("Password: "); answer = input("> ")',
    "docker login -u ci -p $REGISTRY_PASSWORD registry.internal",
    'redis-cli -a "$REDIS_PASSWORD" ping',
]


@pytest.mark.parametrize("code", CODE)
def test_code_that_refers_to_a_secret_is_published_unchanged(code):
    assert Detector().find_written(code) == {}
    assert Detector().find_written(json.dumps({"output": code})) == {}  # as a tool's JSON result holds it


def test_a_credential_written_with_escapes_is_replaced_as_written():
    """JSON escapes inside a tool result cut short (it no longer parses), and shell escapes: the text is searched
    unescaped, and what is replaced is the secret as the text writes it."""
    secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8mV3kL9pTxR2"
    escaped = secret_key.replace("/", "\\/")
    text = f'{{"Credentials": {{"AccessKeyId": "\\u0041KIAQYLPMN5HHHFPZAM2", "SecretAccessKey": "{escaped}", "Expir'
    shell = "mysql -u root --password=Pa\\$\\$w0rd-2024 app"
    for written, kept in ((text, '{"Credentials": {"AccessKeyId": "'), (shell, "mysql -u root --password=")):
        found = Detector().find_written(written)
        replaced = redact(written, found)
        assert replaced.startswith(kept) and "<REDACTED:" in replaced
        for secret in ("AKIAQYLPMN5HHHFPZAM2", secret_key, "Pa$$w0rd-2024"):
            assert secret not in replaced and secret not in readable(replaced)
        assert "u0041KIA" not in replaced and "bPxRfiCY" not in replaced and "w0rd" not in replaced


def test_a_text_of_megabytes_is_searched_in_the_parts_the_screen_passes_and_finds_what_a_whole_search_finds(
    monkeypatch,
):
    """A tool output of 3 MB (escaped JSON lines) with credentials in it, one cut by the end of the first part, one
    where two parts overlap, a private key block at its end: searched a part at a time, only the parts the screen
    passes go through the Python patterns (a whole search took 1.7 s and 140 MB a megabyte), and every credential a
    whole search finds is found, whole, and nothing else."""
    from cowork_assets.curation import secrets

    line = '{\\"path\\": \\"/srv/app/file_%d.py\\", \\"size\\": 1234}\\n'
    text = "".join(line % i for i in range(60_000))
    planted = {
        secrets.PART - 30: ' api_key=\\"sk-ant-api03-abcdefghijklmnopqrstu1234567890ABCDEFGHIJKLMN\\" ',
        2 * (secrets.PART - secrets.OVERLAP) + 100: " token: ghp_abcdefghijklmnopqrstuvwxyz0123456789 ",
        len(text) - 10: " -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
        + "x" * 3000
        + "\n-----END RSA PRIVATE KEY----- ",
    }
    for at in sorted(planted, reverse=True):
        text = text[:at] + planted[at] + text[at:]
    assert len(text) > 3 * secrets.LARGE_TEXT
    detector = Detector()
    whole = detector._written(text)
    searched, written = [], detector._written
    monkeypatch.setattr(detector, "_written", lambda part: searched.append(len(part)) or written(part))
    assert detector.find_written(text) == whole
    assert sorted(whole.values()) == ["anthropic_api_key", "github_token", "private_key"]
    assert sum(searched) <= 4 * secrets.PART  # the three parts with a secret and the one the cut one runs into


def _plant(raw: Path) -> dict[str, list[str]]:
    """Every credential planted in three places of passing teacher runs (raw JSON Lines edited in place): a tool's
    result (a JSON result holding it beside the original output), a call's arguments and the assistant's reasoning.
    Returns trajectory id -> what was planted there."""
    planted: dict[str, list[str]] = {}
    plants = [(secret, place) for secret in PLANTED for place in ("tool", "arguments", "reasoning")]
    for path in sorted(raw.glob("*/*.jsonl")):
        lines = path.read_bytes().splitlines()
        for i, line in enumerate(lines):
            try:
                run = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(run, dict) or not (run.get("grade") or {}).get("passed") or not plants:
                continue
            calls = [m for m in run["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
            results = [m for m in run["messages"] if m["role"] == "tool"]
            if (run.get("teacher") or {}).get("role") != "teacher" or not calls or not results:
                continue
            for _ in range(3):  # three plants a run
                if not plants:
                    break
                secret, place = plants.pop()
                shown = _in_text(secret)
                if place == "tool":  # a tool's result as JSON, as tools return it (a JSON setting as an object)
                    config = json.loads(shown) if shown.startswith("{") else shown
                    results[0]["content"] = json.dumps({"config": config, "output": results[0]["content"]})
                elif place == "arguments":
                    call = calls[0]["tool_calls"][0]["function"]
                    arguments = call["arguments"]
                    arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
                    call["arguments"] = json.dumps({**arguments, "note": shown})
                else:
                    calls[-1]["reasoning_content"] = f"The config says {shown}, so I go on."
                planted.setdefault(run["trajectory_id"], []).append(secret)
            lines[i] = orjson.dumps(run)
        path.write_bytes(b"\n".join(lines) + b"\n")
    assert not plants
    return planted


def test_planted_credentials_reach_no_published_file_or_export(tmp_path, capsys):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_assets.synthetic.generate import generate
    from cowork_cli.cli import main
    from cowork_cli.runner import ensure_instance, materialize_all

    raw = tmp_path / "raw"
    generate(raw, trajectories=240, batches=1, seed=3)
    planted = _plant(raw)
    secrets = {s for found in planted.values() for s in found}
    assert len(secrets) == len(PLANTED)
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "curated"))
    assert materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None).failed == {}
    published = tmp_path / "curated" / "published"
    files = [p for p in published.rglob("*") if p.is_file()]
    for out, fmt in (("sft.jsonl", "jsonl"), ("openai.jsonl", "openai"), ("lf", "llamafactory")):
        assert (
            main(["export", "--data-root", str(tmp_path / "curated"), "--format", fmt, "--out", str(tmp_path / out)])
            == 0
        )
    files += [p for p in tmp_path.glob("*.jsonl")] + list((tmp_path / "lf").rglob("*.json*"))
    for path in files:
        data = path.read_bytes()
        leaked = [s for s in secrets if s.encode() in data or json.dumps(s)[1:-1].encode() in data]
        assert not leaked, (path, leaked)
    sft = pl.read_parquet(published / "sft_dataset" / "current" / "*.parquet")
    shown = {t for t in planted if t in set(sft["sample_id"])}
    assert shown  # the redacted runs are still published, with placeholders
    tables = tmp_path / "curated" / "tables"
    redactions = pl.read_parquet(tables / "redactions" / "batch=*" / "data.parquet")
    curated = pl.read_parquet(tables / "curated_messages" / "batch=*" / "data.parquet")
    fields = pl.struct("content", "reasoning_content", "tool_calls")
    text = "\n".join(curated.select(fields.struct.json_encode()).to_series())
    assert not [s for s in secrets if s in text or json.dumps(s)[1:-1] in text]
    # a row wherever a secret was replaced (a planted one a truncation cut away was never shown)
    assert set(redactions["trajectory_id"]) <= set(planted) and set(redactions["secret_hash"]).isdisjoint(secrets)
    card = json.loads((published / "sft_dataset" / "current" / "card.json").read_text())
    replaced = set(redactions.filter(pl.col("trajectory_id").is_in(list(shown)))["kind"])
    counted = {r["kind"]: r["count"] for r in card["redactions"]}
    assert counted and set(counted) <= replaced  # the placeholders the published rows hold, per kind
    placeholders = "\n".join(sft.select(pl.struct("messages").struct.json_encode()).to_series())
    assert counted == {k: placeholders.count(f"<REDACTED:{k}>") for k in counted}
    assert "## Secrets redacted" in (published / "sft_dataset" / "current" / "card.md").read_text()


def test_a_secret_a_check_depends_on_is_flagged_like_lost_evidence():
    from cowork_assets.curation.curate import curate_chunk
    from cowork_assets.evidence.build import build_evidence
    from cowork_assets.ingest.flatten import flatten_chunk, read_lines
    from cowork_assets.settings import CurationSettings

    token = next(s for s, k in PLANTED.items() if k == "github_token")
    run = {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": "t1",
        "task": {
            "task_id": "deploy-1",
            "category": "multi_turn",
            "request": "Rotate the CI token and tell me the new one.",
            "checks": [{"id": "told", "type": "keywords_present", "keywords": [token]}],
        },
        "teacher": {"model": "m", "role": "teacher"},
        "messages": [
            {"role": "user", "content": "Rotate the CI token and tell me the new one."},
            {"role": "assistant", "content": f"The new token is {token}."},
        ],
        "grade": {"score": 1.0, "passed": True, "checks": {"told": True}},
    }
    frames = flatten_chunk(read_lines([orjson.dumps(run)]), ["b/a.jsonl"], [1], "b")
    evidence, _ = build_evidence(
        "b", frames["trajectories"], frames["task_packages"], frames["tool_calls"], frames["messages"]
    )
    out = curate_chunk("b", frames["trajectories"], frames["messages"], evidence, CurationSettings())
    assert out["evidence_rollup"]["redacted_evidence"].to_list() == [1]
    assert out["curated_messages"]["content"].to_list()[-1] == "The new token is <REDACTED:github_token>."


def test_a_task_whose_checks_compare_a_secret_is_kept_out_of_rl():
    from cowork_assets.curation.redact import checked_secrets
    from cowork_assets.selection.exclusions import secret_check_rows

    token = next(s for s, k in PLANTED.items() if k == "github_token")
    packages = pl.DataFrame(
        {
            "task_id": ["ci-1", "ci-2"],
            "request": [f"Store the token {token} in the vault.", "List the vaults."],
            "initial_state": ["{}", "{}"],
            "checks": [
                json.dumps([{"id": "stored", "type": "tool_called", "tool": "vault_put", "args": {"value": token}}]),
                json.dumps([{"id": "listed", "type": "tool_called", "tool": "vault_list"}]),
            ],
        }
    )
    found = checked_secrets(packages, Detector())
    assert found.rows() == [("ci-1", "github_token")]
    row = secret_check_rows(found).row(0, named=True)
    assert (row["dataset"], row["task_id"], row["criterion"]) == ("rl_tasks", "ci-1", "evidence")


def test_the_real_logs_of_every_reader_hold_no_secret_but_the_password_a_task_gave(tmp_path):
    """False positives, measured: every text of every run of the conformance corpus (real logs of every reader,
    coding agents' included) is searched. The one value found is a real credential: the password OpenAgentSafety's
    task prompt gives the agent for its service."""
    import shutil

    from cowork_assets.ingest.batch import ingest_batch
    from cowork_assets.store.registry import TABLES
    from tests.conftest import TESTS

    corpus = TESTS / "conformance"
    readers = sorted(p.name for p in corpus.iterdir() if p.is_dir() and not p.name.startswith("_"))
    for reader in readers:
        shutil.copytree(corpus / reader, tmp_path / "raw" / reader, ignore=shutil.ignore_patterns("LICENSE*", "*.md"))
        ingest_batch(tmp_path / "raw", reader, tmp_path / "out")
    messages = pl.concat([TABLES["messages"].read(tmp_path / "out", r) for r in readers], how="diagonal_relaxed")
    found = redaction.find(messages, Detector())
    assert messages.height > 1500
    assert set(found["secret"]) == {"theagentcompany"}
