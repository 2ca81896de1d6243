"""Secret shapes for the privacy tests: realistic in form, fake in value.

Each entry is (kind, text a person or a tool would produce, the secret in it). Every value was made up
for this file (random characters in the vendor's format); none is a real credential. The secrets are
distinctive on purpose, so finding one anywhere in the memory means it leaked rather than that an
ordinary word happened to match.
"""

from __future__ import annotations

from typing import NamedTuple


class Secret(NamedTuple):
    kind: str
    text: str
    secret: str

    @property
    def fits_a_url(self) -> bool:
        """The shape is itself part of a URL (credentials, a query parameter, a webhook)."""
        return self.text.startswith(("http://", "https://", "postgres", "mysql://", "mongodb", "redis://", "amqp"))


_RSA = "MIIEowIBAAKCAQEAz3Hq9Lk2VwPbT7xYfR4mNc8sJd0aGu"
_EC = "MHcCAQEEIKq8Zt3vR9mWx2LbN7yPf4HsQa1cDe6GjUo"
_OPENSSH = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB"
_PGP = "lQOYBGXq3ZkBCADKq7vN2mLp9RtYw4XcB8dFsJ"
_GCP = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7kQ"

SECRETS: list[Secret] = [
    # AWS
    Secret("aws_access_key_id", "export AWS_ACCESS_KEY_ID=AKIAQ7TZX3WKRM5YB2NH", "AKIAQ7TZX3WKRM5YB2NH"),
    Secret("aws_access_key_bare", "the key AKIAV4JQ8RZT2NXW6PLM stopped working", "AKIAV4JQ8RZT2NXW6PLM"),
    Secret("aws_secret_env", "AWS_SECRET_ACCESS_KEY=Qw3rTy7uIo9pAs2dFg4hJk6lZx8cVb1nMq5wEr0t",
           "Qw3rTy7uIo9pAs2dFg4hJk6lZx8cVb1nMq5wEr0t"),
    Secret("aws_secret_ini", "aws_secret_access_key = Hn7Jm2Kq9Lw4Pe6Rt1Yu3Io8Zx5Cv0Bn2Mq7Ws4E",
           "Hn7Jm2Kq9Lw4Pe6Rt1Yu3Io8Zx5Cv0Bn2Mq7Ws4E"),
    Secret("aws_session_token", "aws configure set aws_session_token FwoGZXIvYXdzEPr7Kq2Lm9Nx4Tz",
           "FwoGZXIvYXdzEPr7Kq2Lm9Nx4Tz"),
    # Google Cloud
    Secret("gcp_service_account_key",
           '{"type": "service_account", "project_id": "demo-4471", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
           + _GCP + '\\n-----END PRIVATE KEY-----\\n", "client_email": "svc@demo-4471.iam.gserviceaccount.com"}',
           _GCP),
    Secret("gcp_api_key", "maps key AIzaSyD7kQ2vX9mWp4LzR8tN3bYc6HfJ1sGe0aU", "AIzaSyD7kQ2vX9mWp4LzR8tN3bYc6HfJ1sGe0aU"),
    Secret("gcp_oauth_token", "access ya29.a0AfB_byC7qW2eR9tY4uI1oP6aS3dF8gH5jK0lZ",
           "ya29.a0AfB_byC7qW2eR9tY4uI1oP6aS3dF8gH5jK0lZ"),
    # Azure
    Secret("azure_storage_connection",
           "DefaultEndpointsProtocol=https;AccountName=demo;AccountKey=Zq8Xw3Vt6Ur9Sp2Om5Nl8Kj1Ih4Gf7Ed0Cb3Aa6Yx9W==;"
           "EndpointSuffix=core.windows.net", "Zq8Xw3Vt6Ur9Sp2Om5Nl8Kj1Ih4Gf7Ed0Cb3Aa6Yx9W=="),
    Secret("azure_client_secret", "AZURE_CLIENT_SECRET=Pv8Q~xR2tY5uW8zB1cE4gH7jK0mN3pS6vX9",
           "Pv8Q~xR2tY5uW8zB1cE4gH7jK0mN3pS6vX9"),
    Secret("azure_openai_key", "curl -H 'api-key: 4f9c2b7e1d8a3f6c0b5e9d2a7c4f1e8b' https://demo.openai.azure.com",
           "4f9c2b7e1d8a3f6c0b5e9d2a7c4f1e8b"),
    Secret("azure_sas_signature",
           "https://demo.blob.core.windows.net/c/f.txt?sv=2022-11-02&sig=Xq9W2e5R8t1Y4u7I0o3P6a9S2d5F8g%3D",
           "Xq9W2e5R8t1Y4u7I0o3P6a9S2d5F8g%3D"),
    # Code hosts, chat, payments, AI vendors
    Secret("github_classic", "GITHUB_TOKEN=ghp_T7kQ2mX9vW4pL8zR3nB6yC1hF5jD0sGe7aUq", "ghp_T7kQ2mX9vW4pL8zR3nB6yC1hF5jD0sGe7aUq"),
    Secret("github_fine_grained", "token github_pat_11AQ7ZK2Y0Xb3Wq9Er4Ty_8Ui2Op5As7Df0Gh3Jk6Lz9Xc2Vb5Nm8Qw",
           "github_pat_11AQ7ZK2Y0Xb3Wq9Er4Ty_8Ui2Op5As7Df0Gh3Jk6Lz9Xc2Vb5Nm8Qw"),
    Secret("github_oauth", "gho_W3eR6tY9uI2oP5aS8dF1gH4jK7lZ0xC3vB6n", "gho_W3eR6tY9uI2oP5aS8dF1gH4jK7lZ0xC3vB6n"),
    Secret("gitlab_pat", "git config credential glpat-Rt7Yu2Io5Pa8Sd1Fg4Hj", "glpat-Rt7Yu2Io5Pa8Sd1Fg4Hj"),
    Secret("slack_bot", "SLACK_BOT_TOKEN=xoxb-7391046285-5820374619-Kq9Wx2Ev5Rb8Tn1Ym4Uz7Ic",
           "xoxb-7391046285-5820374619-Kq9Wx2Ev5Rb8Tn1Ym4Uz7Ic"),
    Secret("slack_user", "xoxp-2948571036-4817263950-9182736450-Zx8Cv5Bn2Mq9Wl6Er3Ty0Ui7Op",
           "xoxp-2948571036-4817263950-9182736450-Zx8Cv5Bn2Mq9Wl6Er3Ty0Ui7Op"),
    Secret("slack_webhook", "https://hooks.slack.com/services/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C",
           "Lm4Np7Qr0St3Uv6Wx9Yz2Ab5C"),
    Secret("stripe_secret", "stripe.api_key = 'sk_live_51Hq7Kx2Lm9Np4Rs8Tv3Wx6Yz'", "sk_live_51Hq7Kx2Lm9Np4Rs8Tv3Wx6Yz"),
    Secret("stripe_restricted", "rk_live_72Jd9Fk3Lg6Mh1Nq4Pr8St5V", "rk_live_72Jd9Fk3Lg6Mh1Nq4Pr8St5V"),
    Secret("openai_project", "OPENAI_API_KEY=sk-proj-Qm7Xv2Wk9Lp4Zr8Nb3Yc6Hf1Jd5Sg0AeTu",
           "sk-proj-Qm7Xv2Wk9Lp4Zr8Nb3Yc6Hf1Jd5Sg0AeTu"),
    Secret("openai_legacy", "client = OpenAI(api_key=sk-Vb8Nm2Qw5Er9Ty3Ui6Op1As4Df7Gh0Jk)", "sk-Vb8Nm2Qw5Er9Ty3Ui6Op1As4Df7Gh0Jk"),
    Secret("anthropic", "export ANTHROPIC_API_KEY=sk-ant-api03-Hx7Kq2Wm9Lv4Zp8Nr3Tb6Yc1Fj5-Ds0GeAu",
           "sk-ant-api03-Hx7Kq2Wm9Lv4Zp8Nr3Tb6Yc1Fj5-Ds0GeAu"),
    Secret("huggingface", "huggingface-cli login --token hf_Kp8Xq3Wv6Mz9Lr2Nt5Yb7Hc1Jf4Dg0Se", "hf_Kp8Xq3Wv6Mz9Lr2Nt5Yb7Hc1Jf4Dg0Se"),
    Secret("npm", "//registry.npmjs.org/:_authToken=npm_Q7w2E9r4T1y6U3i8O5p0A7s2D9f4G1h6J3k8",
           "npm_Q7w2E9r4T1y6U3i8O5p0A7s2D9f4G1h6J3k8"),
    Secret("pypi", "password = pypi-AgEIcHlwaS5vcmcCJDk3ZmQ4YjJlLTRhMWMtNDdmYi05YzNlLTVkOGIxZjJhN2M0ZQ",
           "pypi-AgEIcHlwaS5vcmcCJDk3ZmQ4YjJlLTRhMWMtNDdmYi05YzNlLTVkOGIxZjJhN2M0ZQ"),
    Secret("sendgrid", "SG.Xq7Wv2Mz9Lp4Kr8Nb3Yc6H.f1Jd5Sg0AeTu7Ko2Lm9Np4Qr8St3Vw6Xy1Za5Bc",
           "SG.Xq7Wv2Mz9Lp4Kr8Nb3Yc6H.f1Jd5Sg0AeTu7Ko2Lm9Np4Qr8St3Vw6Xy1Za5Bc"),
    Secret("telegram_bot", "bot 7381920465:AAFq9Wz2Xv5Mk8Lp1Nr4Tb7Yc0Hj3Df6SgEu", "7381920465:AAFq9Wz2Xv5Mk8Lp1Nr4Tb7Yc0Hj3Df6SgEu"),
    Secret("twilio", "TWILIO key SK7d3f9b1e5a8c2d6f0b4e7a1c9d3f5b8e", "SK7d3f9b1e5a8c2d6f0b4e7a1c9d3f5b8e"),
    # Tokens and headers
    Secret("jwt", "id_token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1LTQ0NzEifQ.Tq9Xw2Vm5Lk8Jp1Hn4Gb7Fc0Dz3Sy6Ra",
           "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1LTQ0NzEifQ.Tq9Xw2Vm5Lk8Jp1Hn4Gb7Fc0Dz3Sy6Ra"),
    Secret("bearer_header", 'curl -H "Authorization: Bearer Zr8Xk2Qw5Mv9Lp3Nt6Yb1Hc4" https://api.example.com/v1',
           "Zr8Xk2Qw5Mv9Lp3Nt6Yb1Hc4"),
    Secret("basic_header", "Authorization: Basic YWxpY2U6V29uZGVybGFuZDQ0NzE=", "YWxpY2U6V29uZGVybGFuZDQ0NzE="),
    Secret("x_api_key_header", "x-api-key: 7c1e9a4f2b8d5c0e3a6f9b2d", "7c1e9a4f2b8d5c0e3a6f9b2d"),
    Secret("cookie_header", "Cookie: sessionid=Qk7vW2xM9pL4; csrftoken=Zr3nB8yC", "Qk7vW2xM9pL4"),
    # Passwords in URLs and query strings
    Secret("url_credentials", "https://alice:Wonderl4nd-Kq7@intranet.example.com/dash", "Wonderl4nd-Kq7"),
    Secret("url_token_user", "git clone https://Xq7Wv2Mz9Lp4Kr8Nb3Yc6Hf1Jd5Sg0Ae@github.com/acme/app.git",
           "Xq7Wv2Mz9Lp4Kr8Nb3Yc6Hf1Jd5Sg0Ae"),
    Secret("query_password", "https://example.com/login?user=bob&password=Tr0ub4dor-Zq9", "Tr0ub4dor-Zq9"),
    Secret("query_token", "https://api.example.com/feed?format=json&token=Vq8Wm3Xz6Lp9", "Vq8Wm3Xz6Lp9"),
    Secret("query_api_key", "https://maps.example.com/v2?api_key=Rk5Tn8Wq2Xm7&q=cafe", "Rk5Tn8Wq2Xm7"),
    Secret("oauth_fragment", "https://app.example.com/cb#access_token=Hq4Wz7Xk1Mv9Lp3&expires_in=3600",
           "Hq4Wz7Xk1Mv9Lp3"),
    # Database URLs
    Secret("postgres_url", "postgres://app:Pg-Secr3t-Zx9@db.internal:5432/prod", "Pg-Secr3t-Zx9"),
    Secret("mysql_url", "mysql://root:My5ql-Kw7Vq@127.0.0.1:3306/shop", "My5ql-Kw7Vq"),
    Secret("mongodb_url", "mongodb+srv://svc:M0ngo-Qx8Wz@cluster0.example.net/db", "M0ngo-Qx8Wz"),
    Secret("redis_url", "redis://:R3dis-Vk9Mq@cache.internal:6379/0", "R3dis-Vk9Mq"),
    Secret("amqp_url", "amqp://guest:Rabb1t-Zq4Wx@mq.internal:5672/", "Rabb1t-Zq4Wx"),
    # Command lines
    Secret("cli_password_flag", "app --password Hx8Kq2Wm-Lv4 --verbose", "Hx8Kq2Wm-Lv4"),
    Secret("cli_password_equals", "backup-tool --password=Zp7Nr3Tb-Yc1 run", "Zp7Nr3Tb-Yc1"),
    Secret("cli_token_flag", "vault login --token s.Qw8Er3Ty6Ui9Op2As5", "s.Qw8Er3Ty6Ui9Op2As5"),
    Secret("mysql_p", "mysql -u root -pMyR00t-Kz8 shop", "MyR00t-Kz8"),
    Secret("sshpass", "sshpass -p 'Ssh-Pw7Xq2' ssh deploy@10.0.0.7", "Ssh-Pw7Xq2"),
    Secret("curl_user", "curl -u alice:Cu4l-Vz8Wq https://api.example.com", "Cu4l-Vz8Wq"),
    Secret("pgpassword", "PGPASSWORD=Pq9Wx2Zk5 psql -h db -U app", "Pq9Wx2Zk5"),
    Secret("docker_login", "docker login -u bob -p D0cker-Xq7 registry.example.com", "D0cker-Xq7"),
    Secret("redis_cli", "redis-cli -h cache -a Rc7Vq2Xw9 ping", "Rc7Vq2Xw9"),
    Secret("openssl_pass", "openssl pkcs12 -export -passout pass:0pen5sl-Kq4 -out cert.p12", "0pen5sl-Kq4"),
    Secret("keytool", "keytool -list -keystore app.jks -storepass St0re-Wz6", "St0re-Wz6"),
    # Environment and config
    Secret("django_secret_key", "SECRET_KEY=dj4ngo-Kq7!Wx2@Zm9#Lp4$Vr8", "dj4ngo-Kq7!Wx2@Zm9#Lp4$Vr8"),
    Secret("json_password", '{"user": "app", "password": "Js0n-Pw9Xk2"}', "Js0n-Pw9Xk2"),
    Secret("yaml_client_secret", "client_secret: Ym1-Cs7Vq3Wz", "Ym1-Cs7Vq3Wz"),
    Secret("dotenv_api_key", "STRIPE_API_KEY='Dq3Wv8Xz1Mk6'", "Dq3Wv8Xz1Mk6"),
    Secret("ini_passwd", "passwd = In1-Pw5Zq8", "In1-Pw5Zq8"),
    # Private key blocks
    Secret("rsa_private_key", "-----BEGIN RSA PRIVATE KEY-----\n" + _RSA + "\nQk7vW2xM9pL4\n-----END RSA PRIVATE KEY-----",
           _RSA),
    Secret("ec_private_key", "-----BEGIN EC PRIVATE KEY-----\n" + _EC + "\n-----END EC PRIVATE KEY-----", _EC),
    Secret("openssh_private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + _OPENSSH +
           "\n-----END OPENSSH PRIVATE KEY-----", _OPENSSH),
    Secret("pgp_private_key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + _PGP + "\n=Xq7W\n"
           "-----END PGP PRIVATE KEY BLOCK-----", _PGP),
    # Said in words
    Secret("spoken_password", "my password is Quartz-Zebra-4471", "Quartz-Zebra-4471"),
    Secret("spoken_wifi", "The wifi password was Tr0pic4l-Kiwi", "Tr0pic4l-Kiwi"),
    Secret("spoken_passphrase", "my passphrase is violet marble harbour 7731", "violet marble harbour 7731"),
    Secret("chinese_password", "我的密码是Mm7Xq2Wz9，别告诉别人", "Mm7Xq2Wz9"),
    Secret("chinese_password_colon", "银行卡密码：K8q3W6x1", "K8q3W6x1"),
]
