"""Vendor credential formats, for :mod:`magi_desktop.core.redact`.

The families follow the public secret-scanning rule sets — gitleaks' default configuration (MIT) first,
then what trufflehog, Yelp's detect-secrets and secretlint add — read as references; the patterns here
are written for this project (tests/fixtures/secrets/ATTRIBUTION.md names the public rule each family
mirrors). Two kinds:

* :data:`TOKENS` — a format that is recognisable on its own (a prefix such as ``sgp_`` or ``hvs.``, or a
  shape nothing else has): redacted wherever it stands. Each row is (family, pattern, the lower-cased
  substrings one of which must occur for the pattern to be tried at all).
* :data:`KEYED` — a format that is only a shape (32 hex digits, a UUID…): redacted when it is the value
  assigned to a name that says whose it is (``adobe_client_id = "…"``). Each row is (family, the words one
  of which the name contains, the value's shape). A name that says it holds a secret (``…_token``) needs no
  family: the generic rules in ``redact.py`` take its value whatever its shape.
"""

from __future__ import annotations


def hex_(n: str) -> str:
    return f"[a-fA-F0-9]{{{n}}}"


def alnum(n: str) -> str:
    return f"[a-zA-Z0-9]{{{n}}}"


def ext(n: str) -> str:
    """Letters, digits, ``=_-``."""
    return f"[a-zA-Z0-9=_\\-]{{{n}}}"


def ext_short(n: str) -> str:
    """Letters, digits, ``_-``."""
    return f"[a-zA-Z0-9_\\-]{{{n}}}"


def ext_long(n: str) -> str:
    """Letters, digits, ``/=_+-``."""
    return f"[a-zA-Z0-9/=_+\\-]{{{n}}}"


UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_B = r"(?<![A-Za-z0-9_])"          # a token starts here
_E = r"(?![A-Za-z0-9_])"           # and ends here
_E64 = r"(?![A-Za-z0-9+/=_])"      # a base64 token ends here


TOKENS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("onepassword", r"\bops_eyJ[A-Za-z0-9+/]{100,}={0,3}", ("ops_",)),
    ("onepassword", r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b",
     ("a3-",)),
    ("adobe", _B + r"p8e-[A-Za-z0-9]{32}" + _E, ("p8e-",)),
    ("age", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("age-secret-key-1",)),
    ("airtable", _B + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + _E, ("pat",)),
    ("alibaba", _B + r"LTAI[A-Za-z0-9]{12,20}" + _E, ("ltai",)),
    ("anthropic", _B + r"sk-ant-(?:api|admin)\d\d-[A-Za-z0-9_\-]{80,}", ("sk-ant-",)),
    ("openai", _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),
    ("artifactory", _B + r"AKCp[A-Za-z0-9]{69}" + _E, ("akcp",)),
    ("artifactory", _B + r"cmVmd[A-Za-z0-9]{59}" + _E, ("cmvmd",)),
    ("atlassian", _B + r"ATATT3[A-Za-z0-9_\-=]{186}", ("atatt3",)),
    ("authress", _B + r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}"
                      r"\.[A-Za-z0-9+/_=-]{30,120}", ("sc_", "ext_", "scauth_", "authress_")),
    ("aws", _B + r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}" + _E,
     ("a3t", "akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "anva", "aipa")),
    ("aws", _B + r"ABSK[A-Za-z0-9+/]{109,269}={0,2}", ("absk",)),
    ("aws", r"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&]*", ("bedrock-api-key-",)),
    ("azure_ad", r"(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"
                 r"(?![A-Za-z0-9_~\-])(?!\.[A-Za-z0-9_~\-])", ("q~",)),
    ("clickhouse", _B + r"4b1d[A-Za-z0-9]{38}" + _E, ("4b1d",)),
    ("clojars", _B + r"(?i:CLOJARS_[a-z0-9]{60})" + _E, ("clojars_",)),
    ("cloudflare", _B + r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", ("v1.0-",)),
    ("databricks", _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E, ("dapi",)),
    ("defined_networking", _B + r"dnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}", ("dnkey-",)),
    ("digitalocean", _B + r"do[opr]_v1_[a-f0-9]{64}" + _E, ("_v1_",)),
    ("discord", r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+", ("discord",)),
    ("discord", _B + r"[MN][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38}" + _E, ("",)),
    ("docker", _B + r"dckr_pat_[A-Za-z0-9_\-]{27,}", ("dckr_pat_",)),
    ("doppler", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _E, ("dp.",)),
    ("dropbox", _B + r"sl\.[A-Za-z0-9\-=_]{135,}", ("sl.",)),
    ("duffel", _B + r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}", ("duffel_",)),
    ("dynatrace", _B + r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", ("dt0c01.",)),
    ("easypost", _B + r"EZ[AT]K[A-Za-z0-9]{54}" + _E, ("ezak", "eztk")),
    ("facebook", _B + r"\d{15,16}(?:\||%7[Cc])[0-9A-Za-z\-_]{27,40}" + _E, ("|", "%7c")),
    ("facebook", _B + r"EAA[MC][A-Za-z0-9]{100,}", ("eaam", "eaac")),
    ("flutterwave", _B + r"FLW(?:SECK|PUBK)_TEST-[A-Ha-h0-9]{12,32}(?:-X)?", ("flwseck_test", "flwpubk_test")),
    ("flyio", _B + r"(?:fo1_[\w-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3})",
     ("fo1_", "fm1", "fm2_")),
    ("frameio", _B + r"fio-u-[A-Za-z0-9\-_=]{64}", ("fio-u-",)),
    ("gcp", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, ("aiza",)),
    ("gcp", _B + r"ya29\.[0-9A-Za-z_\-]{20,}", ("ya29.",)),
    ("gcp", _B + r"GOCSPX-[A-Za-z0-9_\-]{28}", ("gocspx-",)),
    ("github", _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("gitlab", _B + r"gl(?:pat|dt|ffct|ft|imt|agent|oas|ptt|rt|soat)-[0-9A-Za-z_\-.]{20,300}",
     ("glpat-", "gldt-", "glffct-", "glft-", "glimt-", "glagent-", "gloas-", "glptt-", "glrt-", "glsoat-")),
    ("gitlab", _B + r"glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_\-]{20}", ("glcbt-",)),
    ("gitlab", _B + r"GR1348941[\w-]{20}", ("gr1348941",)),
    ("grafana", _B + r"eyJrIjoi[A-Za-z0-9]{70,400}={0,3}", ("eyjrijoi",)),
    ("grafana", _B + r"glc_[A-Za-z0-9+/]{32,400}={0,3}", ("glc_",)),
    ("grafana", _B + r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _E, ("glsa_",)),
    ("groq", _B + r"gsk_[A-Za-z0-9]{52}" + _E, ("gsk_",)),
    ("harness", _B + r"(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}" + _E, ("pat.", "sat.")),
    ("hashicorp", _B + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9\-_=]{60,70}", ("atlasv1",)),
    ("heroku", _B + r"HRKU-AA[0-9A-Za-z_\-]{58}", ("hrku-aa",)),
    ("huggingface", _B + r"(?:hf_|api_org_)[A-Za-z0-9]{30,}" + _E, ("hf_", "api_org_")),
    # not after a dot: video_box.ico-<hash>.png is a file name
    ("infracost", r"(?<![A-Za-z0-9_.])ico-[A-Za-z0-9]{32}" + _E, ("ico-",)),
    ("intra42", _B + r"[su]-s4t2(?:ud|af)-[a-fA-F0-9]{64}" + _E, ("s4t2ud-", "s4t2af-")),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-/\\]{5,}\.[A-Za-z0-9_\-/\\]*={0,2}", ("eyj",)),
    ("jwt", _B + r"ZXlK[A-Za-z0-9+/]{60,}={0,2}", ("zxlk",)),
    ("linear", _B + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + _E, ("lin_api_", "lin_oauth_")),
    ("mailchimp", _B + r"[a-f0-9]{32}-us\d{1,2}" + _E, ("-us",)),
    ("mailgun", _B + r"(?:key|pubkey)-[0-9a-zA-Z]{32}" + _E, ("key-",)),
    ("mapbox", _B + r"[ps]k\.eyJ[A-Za-z0-9_\-]{50,}\.[A-Za-z0-9_\-]{20,}", ("pk.", "sk.")),
    ("mapbox", _B + r"pk\.[A-Za-z0-9]{60}\.[A-Za-z0-9]{22}" + _E, ("pk.",)),
    ("maxmind", _B + r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk" + _E, ("_mmk",)),
    ("microsoft_teams", r"https://[A-Za-z0-9]+\.webhook\.office\.com/webhookb2/[^\s\"'<>]+", ("webhook.office.com",)),
    ("new_relic", _B + r"NR(?:JS|II|AK)-[A-Za-z0-9-]{19,32}" + _E, ("nrjs-", "nrii-", "nrak-")),
    ("notion", _B + r"ntn_[0-9]{11}[A-Za-z0-9]{35}" + _E, ("ntn_",)),
    ("notion", _B + r"secret_[A-Za-z0-9]{43}" + _E, ("secret_",)),
    ("npm", _B + r"npm_[A-Za-z0-9]{36}" + _E, ("npm_",)),
    ("octopus_deploy", _B + r"API-[A-Z0-9]{26}" + _E, ("api-",)),
    ("openshift", _B + r"sha256~[\w-]{43}", ("sha256~",)),
    ("perplexity", _B + r"pplx-[A-Za-z0-9]{48}", ("pplx-",)),
    ("plaid", _B + r"access-(?:sandbox|development|production)-" + UUID, ("access-",)),
    ("planetscale", _B + r"pscale_(?:tkn|oauth|pw)_[\w=.\-]{32,64}", ("pscale_",)),
    ("postman", _B + r"PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}" + _E, ("pmak-",)),
    ("prefect", _B + r"pnu_[A-Za-z0-9]{36}" + _E, ("pnu_",)),
    ("pulumi", _B + r"pul-[a-f0-9]{40}" + _E, ("pul-",)),
    ("pypi", _B + r"pypi-[A-Za-z0-9_\-]{50,}", ("pypi-",)),
    ("readme", _B + r"rdme_[a-z0-9]{70}" + _E, ("rdme_",)),
    ("replicate", _B + r"r8_[A-Za-z0-9]{37}" + _E, ("r8_",)),
    ("rubygems", _B + r"rubygems_[a-f0-9]{48}" + _E, ("rubygems_",)),
    ("scalingo", _B + r"tk-us-[\w-]{48}", ("tk-us-",)),
    ("sendgrid", _B + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", ("sg.",)),
    ("sendinblue", _B + r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}" + _E, ("xkeysib-",)),
    ("sentry", _B + r"sntrys_eyJ[A-Za-z0-9+/=_]{50,}", ("sntrys_",)),
    ("sentry", _B + r"sntryu_[a-f0-9]{64}" + _E, ("sntryu_",)),
    ("settlemint", _B + r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}" + _E, ("sm_aat", "sm_pat", "sm_sat")),
    ("shippo", _B + r"shippo_(?:live|test)_[a-fA-F0-9]{40}" + _E, ("shippo_",)),
    # Sidekiq Enterprise's gem server: the whole user-info is the licence (user:password), not only its password
    ("sidekiq", r"(?<=://)[a-f0-9]{8}:[a-f0-9]{8}(?=@(?:gems|enterprise)\.contribsys\.com)", ("contribsys",)),
    ("shopify", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E, ("shpat_", "shpca_", "shppa_", "shpss_")),
    # bot, user, legacy and config tokens open with a number (not "xoxo-indieweb", "xoxb-my-bot-token")
    ("slack", _B + r"(?:xox[bpeos]-\d{6,}-[A-Za-z0-9\-]{8,}|xoxe-\d-[A-Za-z0-9]{100,}"
                    r"|xox[ar]-(?:\d-)?[A-Za-z0-9]{8,48}(?:-[A-Za-z0-9]{8,48})*" + _E + ")", ("xox",)),
    ("slack", _B + r"xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}", ("xoxe.",)),
    ("slack", _B + r"xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+", ("xapp-",)),
    ("slack", r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]+",
     ("hooks.slack.com",)),
    ("sonar", _B + r"sq[upa]_[A-Za-z0-9]{40}" + _E, ("squ_", "sqp_", "sqa_")),
    ("sourcegraph", _B + r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}" + _E, ("sgp_",)),
    ("square", _B + r"(?:EAAA|sq0atp-)[\w-]{22,60}", ("eaaa", "sq0atp-")),
    ("square", _B + r"sq0csp-[\w-]{43}", ("sq0csp-",)),
    ("stripe", _B + r"(?:sk|rk|pk|whsec)_(?:live|test|prod)_[A-Za-z0-9]{10,99}" + _E, ("_live_", "_test_", "_prod_")),
    ("supabase", _B + r"sbp_[a-f0-9]{40}" + _E, ("sbp_",)),
    ("telegram", _B + r"\d{5,16}:A[A-Za-z0-9_\-]{34,40}" + _E, (":a",)),
    ("twilio", _B + r"SK[0-9a-fA-F]{32}" + _E, ("sk",)),
    ("twitter", _B + r"A{22}[A-Za-z0-9%]{80,100}", ("a" * 22,)),
    ("typeform", _B + r"tfp_[A-Za-z0-9\-_.=]{59}", ("tfp_",)),
    ("vault", _B + r"hvs\.[\w-]{90,120}", ("hvs.",)),
    ("vault", _B + r"hvb\.[\w-]{138,300}", ("hvb.",)),
    # s. and 24 letters and digits is also code (s.AcceptanceTimeoutSeconds): a token has a digit
    ("vault", _B + r"s\.(?=[A-Za-z]{0,23}\d)[A-Za-z0-9]{24}" + _E, ("s.",)),
    ("xai", _B + r"xai-[A-Za-z0-9]{80}" + _E, ("xai-",)),
    ("yandex", _B + r"AQVN[A-Za-z0-9_\-]{35,38}" + _E, ("aqvn",)),
    ("yandex", _B + r"t1\.[A-Za-z0-9_\-]+={0,2}\.[A-Za-z0-9_\-]{86}={0,2}", ("t1.",)),
)


KEYED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("adafruit", ("adafruit",), ext_short("32")),
    ("adobe", ("adobe",), hex_("32")),
    ("airtable", ("airtable",), alnum("17")),
    ("algolia", ("algolia",), alnum("32")),
    ("alibaba", ("alibaba",), alnum("30")),
    ("asana", ("asana",), "[0-9]{16}|" + alnum("32")),
    ("atlassian", ("atlassian", "confluence", "jira"), alnum("24")),
    ("beamer", ("beamer",), "b_" + ext("44")),
    ("bitbucket", ("bitbucket",), alnum("32") + "|" + ext("64")),
    ("bittrex", ("bittrex",), alnum("32")),
    ("cisco_meraki", ("meraki",), hex_("40")),
    ("cloudflare", ("cloudflare",), ext_short("40") + "|" + hex_("37")),
    ("codecov", ("codecov",), alnum("32")),
    ("cohere", ("cohere", "co_api_key"), alnum("40")),
    ("coinbase", ("coinbase",), ext_short("64")),
    ("confluent", ("confluent",), alnum("16") + "|" + alnum("64")),
    ("contentful", ("contentful",), ext("43")),
    ("datadog", ("datadog",), alnum("40")),
    ("discord", ("discord",), hex_("64") + "|[0-9]{18}|" + ext("32")),
    ("droneci", ("droneci",), alnum("32")),
    ("dropbox", ("dropbox",), alnum("15") + "|" + alnum("11") + "AAAAAAAAAA" + ext("43")),
    ("etsy", ("etsy",), alnum("24")),
    ("facebook", ("facebook",), hex_("32")),
    ("fastly", ("fastly",), ext("32")),
    ("finicity", ("finicity",), hex_("32") + "|" + alnum("20")),
    ("finnhub", ("finnhub",), alnum("20")),
    ("flickr", ("flickr",), alnum("32")),
    ("freshbooks", ("freshbooks",), alnum("64")),
    ("gitter", ("gitter",), ext_short("40")),
    ("gocardless", ("gocardless",), "live_" + ext("40")),
    ("heroku", ("heroku",), UUID),
    ("hubspot", ("hubspot",), UUID),
    ("intercom", ("intercom",), ext("60")),
    ("jfrog", ("jfrog", "artifactory", "bintray", "xray"), alnum("73") + "|" + alnum("64")),
    ("kraken", ("kraken",), ext_long("80,90")),
    ("kucoin", ("kucoin",), hex_("24") + "|" + UUID),
    ("launchdarkly", ("launchdarkly",), ext("40")),
    ("linear", ("linear",), hex_("32")),
    ("linkedin", ("linkedin", "linked_in", "linked-in"), alnum("14") + "|" + alnum("16")),
    ("lob", ("lob",), "(?:live|test)_(?:pub_)?[a-f0-9]{31,35}"),
    ("looker", ("looker",), alnum("20") + "|" + alnum("24")),
    ("mailgun", ("mailgun",), "[a-h0-9]{32}-[a-h0-9]{8}-[a-h0-9]{8}"),
    ("mattermost", ("mattermost",), alnum("26")),
    ("messagebird", ("messagebird", "message-bird", "message_bird"), alnum("25") + "|" + UUID),
    ("netlify", ("netlify",), ext("40,46")),
    ("new_relic", ("newrelic", "new_relic", "new-relic"), alnum("64")),
    ("nytimes", ("nytimes", "new-york-times", "newyorktimes"), ext("32")),
    ("okta", ("okta",), "00[A-Za-z0-9_=\\-]{40}"),
    ("plaid", ("plaid",), alnum("24") + "|" + alnum("30")),
    ("privateai", ("privateai", "private_ai", "private-ai"), alnum("32")),
    ("rapidapi", ("rapidapi",), ext_short("50")),
    ("sendbird", ("sendbird",), UUID + "|" + hex_("40")),
    ("sentry", ("sentry",), hex_("64")),
    ("sidekiq", ("contribsys",), "[a-f0-9]{8}:[a-f0-9]{8}"),
    ("snyk", ("snyk",), UUID),
    ("sonar", ("sonar",), "(?:squ_|sqp_|sqa_)?" + ext("40")),
    ("sourcegraph", ("sourcegraph",), hex_("40")),
    ("squarespace", ("squarespace",), UUID),
    ("sumologic", ("sumo",), "su" + alnum("12") + "|" + alnum("64")),
    ("telegram", ("telegr",), "[0-9]{5,16}:A" + ext_short("34")),
    ("travisci", ("travis",), alnum("22")),
    ("twitch", ("twitch",), alnum("30")),
    ("twitter", ("twitter",), alnum("25") + "|" + alnum("45") + "|" + alnum("50") + "|[0-9]{15,25}-" + alnum("20,40")),
    ("yandex", ("yandex",), "YC" + ext_short("38")),
    ("zendesk", ("zendesk",), alnum("40")),
)
