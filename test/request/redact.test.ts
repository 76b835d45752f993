// P11: secrets are redacted before anything leaves the process (audit entries, status text).

import { callRecord } from "../helpers/call-record.ts";
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decisionRecord } from "../../src/audit/decision-record.ts";
import { redact, redactValue } from "../../src/request/redact.ts";

const SECRETS: ReadonlyArray<[string, string]> = [
  ["bearer header", "curl -H 'Authorization: Bearer abcdefghijklmnop123' https://api.example.com"],
  ["env assignment", "API_TOKEN=s3cr3t-value npm test"],
  ["exported key", "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx"],
  ["anthropic key", "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz"],
  ["github token", "git remote set-url origin https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/a/b"],
  ["url password", "git clone https://alice:hunter2pass@example.com/repo.git"],
  ["aws key id", "AKIAIOSFODNN7EXAMPLE is the id"],
  ["jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJlLXZhbHVl"],
  ["private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"],
  ["slack token", "xoxb-1234567890-abcdefghij"],
  ["password flag", "mysql --password=hunter2pass -u root"],
];

const SECRET_VALUES = [
  "abcdefghijklmnop123",
  "s3cr3t-value",
  "sk-proj-abcdefghijklmnopqrstuvwx",
  "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
  "ghp_abcdefghijklmnopqrstuvwxyz0123",
  "hunter2pass",
  "AKIAIOSFODNN7EXAMPLE",
  "c2lnbmF0dXJlLXZhbHVl",
  "b3BlbnNzaC1rZXktdjEAAAAA",
  "xoxb-1234567890-abcdefghij",
];

describe("P11: redaction", () => {
  for (const [name, text] of SECRETS) {
    test(`redacts a ${name}`, () => {
      const out = redact(text);
      assert.match(out, /\[REDACTED\]/);
      for (const s of SECRET_VALUES) assert.equal(out.includes(s), false, `${s} leaked in ${out}`);
    });
  }

  test("leaves ordinary commands alone", () => {
    for (const s of ["ls -la src", "git commit -m 'fix the token parser'", "npm run build", "grep -rn KEY_NAME src"]) assert.equal(redact(s), s);
  });

  test("redacts every string of a nested value and secret-named fields", () => {
    const out = JSON.stringify(
      redactValue({
        command: "API_KEY=abc123def npm start",
        headers: { authorization: "Basic Zm9vOmJhcg==" },
        list: ["ok", "sk-proj-abcdefghijklmnopqrstuvwx"],
      }),
    );
    assert.equal(out.includes("abc123def"), false);
    assert.equal(out.includes("Zm9vOmJhcg=="), false);
    assert.equal(out.includes("sk-proj-abcdefghijklmnopqrstuvwx"), false);
    assert.match(out, /npm start/);
  });

  test("decision records carry only redacted messages", () => {
    const r = decisionRecord(
      callRecord({ route: "deny", reason: "hard-deny", outcome: "denied", hash: "h", message: "curl -H 'Authorization: Bearer abcdefghijklmnop123' x" }),
      0,
    );
    assert.equal(r.message.includes("abcdefghijklmnop123"), false);
  });
});
