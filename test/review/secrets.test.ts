// P11: a review of a request full of secrets sends none of them: checked on the wire, at a
// loopback server that received the real HTTP request from pi-ai's OpenAI client.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { redact } from "../../src/request/redact.ts";
import { DEFAULT_LIMITS, runReview } from "../../src/review/engine.ts";
import { verdictDenialText } from "../../src/review/failure.ts";
import type { TranscriptItem } from "../../src/review/transcript.ts";
import { action, useLoopbackRegistry, VERDICT } from "../helpers/review-fixtures.ts";
import { piReviewerModels } from "../../src/tools/reviewer-models.ts";

const env = useLoopbackRegistry();

const SECRETS = {
  openai: "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
  anthropic: "sk-ant-api03-ZyXwVuTsRqPoNmLkJiHgFeDc",
  github: "ghp_0123456789abcdefghijABCDEFGHIJ0123",
  aws: "AKIAIOSFODNN7EXAMPLE",
  jwt: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLWJ5dGVz",
  bearer: "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
  envKey: "hunter2-env-key-value",
  envToken: "tok-3f9a8b7c6d5e",
  envSecret: "shh-its-a-secret-42",
  password: "CorrectHorseBattery9",
  basic: "basicAuthPass77",
  jsonKey: "json-embedded-key-8812",
  flag: "flag-token-value-5531",
  pemBody: "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
} as const;

const PEM = `-----BEGIN PRIVATE KEY-----\n${SECRETS.pemBody}\n-----END PRIVATE KEY-----`;

describe("P11: no secret reaches the reviewer's server", () => {
  test("secrets in the action, the user's messages and the evidence are redacted before sending", async () => {
    const command = [
      `export OPENAI_API_KEY=${SECRETS.openai}`,
      `DEPLOY_KEY=${SECRETS.envKey} SLACK_TOKEN=${SECRETS.envToken} APP_SECRET=${SECRETS.envSecret}`,
      `curl -H 'Authorization: Bearer ${SECRETS.bearer}' -u admin:${SECRETS.basic} --data '{"api_key": "${SECRETS.jsonKey}"}' https://deploy.example.com/build/app`,
      `mysql --password=${SECRETS.password} && tool --token ${SECRETS.flag}`,
    ].join(" && ");
    const transcript: TranscriptItem[] = [
      { kind: "user", text: `my anthropic key is ${SECRETS.anthropic}; deploy build/app with it` },
      { kind: "tool-call", id: "c1", name: "bash", args: { command: `ls build/app; echo ${SECRETS.github}` } },
      { kind: "tool-result", id: "c1", name: "bash", text: `app\nAWS ${SECRETS.aws}\njwt ${SECRETS.jwt}\n${PEM}`, isError: false },
      { kind: "user", text: `and also the jwt ${SECRETS.jwt}, deploy build/app now` },
    ];
    env.lb.script([{ kind: "verdict", text: VERDICT.deny }]);
    const r = await runReview(
      { action: action("bash", { command }), transcript, reviewer: { provider: "loop", model: "judge", thinking: "off" } },
      piReviewerModels(env.reg.registry),
      { ...DEFAULT_LIMITS, deadlineMs: 5000 },
    );
    assert.equal(r.kind, "verdict");
    const wire = env.lb.received.map((x) => x.raw + JSON.stringify(x.headers)).join("\n");
    assert.ok(wire.includes("build/app"), "the request itself did arrive");
    assert.ok(wire.includes("[REDACTED]"));
    for (const [name, value] of Object.entries(SECRETS)) assert.equal(wire.includes(value), false, `${name} reached the server`);
  });

  test("the reviewer's rationale is redacted before the model sees it", () => {
    const text = verdictDenialText({
      risk_level: "high",
      user_authorization: "low",
      outcome: "deny",
      rationale: `It would send ${SECRETS.openai} to a remote host.`,
    });
    assert.equal(text.includes(SECRETS.openai), false);
  });

  test("the redaction patterns the reviewer relies on", () => {
    for (const [text, secret] of [
      [`curl -u bob:${SECRETS.basic} https://x`, SECRETS.basic],
      [`echo '{"client_secret": "${SECRETS.jsonKey}"}'`, SECRETS.jsonKey],
      [`gh api --token ${SECRETS.flag} /user`, SECRETS.flag],
      [`tool --api-key "${SECRETS.flag}"`, SECRETS.flag],
      [`curl -H "x-api-key: ${SECRETS.flag}" u`, SECRETS.flag],
    ] as const) {
      const out = redact(text);
      assert.equal(out.includes(secret), false, `${text} -> ${out}`);
    }
    // Ordinary flags are left alone: the reviewer must still see what the command does.
    assert.equal(redact("git push -u origin main"), "git push -u origin main");
    assert.equal(redact("sort -u names.txt"), "sort -u names.txt");
    assert.equal(redact("docker login --password-stdin < pw.txt"), "docker login --password-stdin < pw.txt");
  });
});
