// One canary secret of every format the redaction must hide (issue 23 item 3), each in the text a
// command or a user's message would carry it in: the twelve that reached the reviewer, the ones
// found missing beside them, and the ones that already held (kept so they stay held). Made-up
// values in each format's shape; none is a real credential.

export interface Canary {
  readonly name: string;
  /** A command line, or a line of a user's message, that holds the secret. */
  readonly text: string;
  /** What must never leave the process. */
  readonly secret: string;
}

const PGP_BODY = "lQOYBF9xk2IBCADL8nW4qzTYqyrEmyVyFunA6b4wjRkmhgSMucKBJ10QEBsfRRDaTEKlT4q14fB";
const PUTTY_PRIVATE = "AAAAIBxq7XUyOFGCUGuUagRABaHiCuQQgvQrzmxPiHzflPk2a";

export const CANARIES: readonly Canary[] = [
  // The twelve that arrived verbatim.
  { name: "stripe sk_live_", text: "the live key sk_live_oXzTYqyrEmyVyFunA6b4wjRk goes in the prod env", secret: "sk_live_oXzTYqyrEmyVyFunA6b4wjRk" },
  { name: "stripe sk_test_", text: "stripe charges list sk_test_51HqLyjWDarjtT1zdp7dcQx9Z", secret: "sk_test_51HqLyjWDarjtT1zdp7dcQx9Z" },
  { name: "stripe rk_live_", text: "echo rk_live_mhgSMucKBJ10QEBsfRRDaTEK > .stripe", secret: "rk_live_mhgSMucKBJ10QEBsfRRDaTEK" },
  {
    name: "slack webhook",
    text: 'curl -X POST -d \'{"text":"hi"}\' https://hooks.slack.com/services/T024BE7LD/B01ABCDEF/IHO324vKbn9yy8k3StmuRAxq',
    secret: "T024BE7LD/B01ABCDEF/IHO324vKbn9yy8k3StmuRAxq",
  },
  {
    name: "slack xapp-",
    text: "export SLACK_APP=xapp-1-A0123456789-1234567890123-ac7aa3dfd065d47977ad1b984d0d2727",
    secret: "xapp-1-A0123456789-1234567890123-ac7aa3dfd065d47977ad1b984d0d2727",
  },
  { name: "gitlab glpat-", text: "echo glpat-_PZJSo5nHna4--L46wI0 | glab auth login --stdin", secret: "glpat-_PZJSo5nHna4--L46wI0" },
  {
    name: "hugging face hf_",
    text: "upload it with 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 as the write token",
    secret: "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",
  },
  {
    name: "typesafe apikey_",
    text: "my typesafe key is apikey_TryMpwMiilZE0xJBcUX1Sq0TbeZ04025, use it for the classifier",
    secret: "apikey_TryMpwMiilZE0xJBcUX1Sq0TbeZ04025",
  },
  {
    name: "aws secret as a positional argument",
    text: "aws configure set aws_secret_access_key wSLpr+OBYYWybSQdCFIk9hzbtL6mD5UJ5TraAMeR --profile prod",
    secret: "wSLpr+OBYYWybSQdCFIk9hzbtL6mD5UJ5TraAMeR",
  },
  { name: "mysql -pPASS", text: "mysql -u root -pHunter2Prod!db -h db.internal app", secret: "Hunter2Prod!db" },
  { name: "sshpass -p PASS", text: "sshpass -p 'Tr0ub4dor&3horse' ssh deploy@web1 uptime", secret: "Tr0ub4dor&3horse" },
  {
    name: "bare token as url userinfo",
    text: "git push https://be04025d6311781f478dc8e7d4cf4bbd@git.example.com/app.git main",
    secret: "be04025d6311781f478dc8e7d4cf4bbd",
  },
  {
    name: "pgp private key block",
    text: `gpg --import <<'EOF'\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n${PGP_BODY}\n=Xq2Z\n-----END PGP PRIVATE KEY BLOCK-----\nEOF`,
    secret: PGP_BODY,
  },
  // Also missed.
  { name: "docker login -p", text: "docker login -u ci -p Sup3rS3cretRegistry registry.example.com", secret: "Sup3rS3cretRegistry" },
  {
    name: "google ya29.",
    text: "gcloud says ya29.a0AfH6SMBvkZG15bC0tOX5UtZuFuprw5OkKVQCds6dbHO expires at noon",
    secret: "ya29.a0AfH6SMBvkZG15bC0tOX5UtZuFuprw5OkKVQCds6dbHO",
  },
  {
    name: "sendgrid SG.",
    text: "send mail with 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 please",
    secret: "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",
  },
  {
    name: "azure AccountKey=",
    text: "az storage blob list --connection-string 'DefaultEndpointsProtocol=https;AccountName=prodstore;AccountKey=ZZSg5rq3tj4IYNechShnMqwEROMYzrE1V9zZh04lGKourJX/StKMjSKgkMIz9Z3BXWKxkBwW4D50NlwDNzgW8I==;EndpointSuffix=core.windows.net'",
    secret: "ZZSg5rq3tj4IYNechShnMqwEROMYzrE1V9zZh04lGKourJX/StKMjSKgkMIz9Z3BXWKxkBwW4D50NlwDNzgW8I==",
  },
  { name: "netrc password", text: "printf 'machine api.example.com login bob password N3trcPassw0rd\\n' >> ~/.netrc", secret: "N3trcPassw0rd" },
  {
    name: "digitalocean dop_v1_",
    text: "doctl auth init -t dop_v1_ac7aa3dfd065d47977ad1b984d0d2727328767a736e2e88b5d8b136d4aad03f1",
    secret: "dop_v1_ac7aa3dfd065d47977ad1b984d0d2727328767a736e2e88b5d8b136d4aad03f1",
  },
  {
    name: "telegram bot token",
    text: "curl https://api.telegram.org/bot4839574813:AAFD39kkdpWt3ywyRZergyOLMaJhac61qc/getMe",
    secret: "4839574813:AAFD39kkdpWt3ywyRZergyOLMaJhac61qc",
  },
  {
    name: "vault hvs.",
    text: "vault login hvs.CAESIFCX22t6WXYZfTIuxhuyCeAa1PRXw7WYr1qYvKKjtDka",
    secret: "hvs.CAESIFCX22t6WXYZfTIuxhuyCeAa1PRXw7WYr1qYvKKjtDka",
  },
  {
    name: "putty private key",
    text: `cat > id.ppk <<'EOF'\nPuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240101\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIBx\nq7XUy\nPrivate-Lines: 1\n${PUTTY_PRIVATE}\nPrivate-MAC: 5c1d8e0f\nEOF`,
    secret: PUTTY_PRIVATE,
  },
  // Held before; kept held.
  { name: "aws AKIA", text: "AWS_ID=AKIAIOSFODNN7QX3ZPLM aws s3 ls", secret: "AKIAIOSFODNN7QX3ZPLM" },
  { name: "github ghp_", text: "gh auth login --with-token <<< ghp_0123456789abcdefghijABCDEFGHIJ0123", secret: "ghp_0123456789abcdefghijABCDEFGHIJ0123" },
  {
    name: "slack xoxb-",
    text: "curl -d token=xoxb-1234567890-0987654321-abcdefghijABCD https://slack.com/api/chat.postMessage",
    secret: "xoxb-1234567890-0987654321-abcdefghijABCD",
  },
  {
    name: "jwt",
    text: "curl -b session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLWJ5dGVz https://app",
    secret: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLWJ5dGVz",
  },
  {
    name: "pem private key",
    text: "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----",
    secret: "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
  },
  { name: "authorization header", text: "curl -H 'Authorization: Bearer u43vkZG15bC0tOX5UtZuFu' https://api.example.com", secret: "u43vkZG15bC0tOX5UtZuFu" },
  {
    name: "npmrc token",
    text: "echo //registry.npmjs.org/:_authToken=npm_mhgSMucKBJ10QEBsfRRDaTEKlT4q14fBxx >> .npmrc",
    secret: "npm_mhgSMucKBJ10QEBsfRRDaTEKlT4q14fBxx",
  },
  { name: "PGPASSWORD=", text: "PGPASSWORD=pgS3cretValue psql -h db -U app", secret: "pgS3cretValue" },
];
