// Every refusal names its class in words a user knows and the one thing that can be done next
// (issue 14), built by the real text builders: one test per class, the table's own shape, and
// that no hard deny ever sends the model to the user for a workaround.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import {
  concurrentDenial,
  DENIAL_CLASS_NAMES,
  DENIAL_CLASSES,
  type DenialClass,
  decisionDenial,
  denialBody,
  denialClassOf,
  denialHead,
  escalationDenial,
  escalationInvalidDenial,
  gateFailureDenial,
  gateLoadDenial,
  noReviewerDenial,
  ticketDenial,
} from "../../src/policy/denial.ts";
import { decide, prepareGate } from "../../src/policy/gate.ts";
import type { Decision, ReasonCode } from "../../src/policy/types.ts";
import { bindingDenialText, failureDenialText, verdictDenialText } from "../../src/review/failure.ts";
import type { FailureClass, Verdict } from "../../src/review/types.ts";
import { reportText } from "../../src/sandbox/effects/report.ts";
import type { EffectReport } from "../../src/sandbox/effects/settle.ts";
import { networkNote } from "../../src/sandbox/network/notes.ts";
import { refusalText } from "../../src/sandbox/network/proxy.ts";

const HEAD = "Blocked by auto mode's automatic policy (not by the user): ";
const deny = (reason: ReasonCode, message: string): Decision => ({ route: "deny", reason, message });
const verdict = (risk: Verdict["risk_level"], rationale: string): Verdict =>
  ({ risk_level: risk, user_authorization: "low", outcome: "deny", rationale }) as Verdict;
/** The text's "Next:" line. */
const nextOf = (text: string) => text.split("\n").find((l) => l.startsWith("Next: ")) ?? "";

/** Head, class and next step of a text, checked together. */
function assertClass(text: string, cls: DenialClass, heading: RegExp, next: RegExp): void {
  assert.equal(denialClassOf(text), cls, text);
  assert.ok(text.startsWith(`${HEAD}${DENIAL_CLASSES[cls].heading}.\n`), text);
  assert.match(DENIAL_CLASSES[cls].heading, heading);
  assert.match(nextOf(text), next, text);
}

describe("each denial class: its words and its next step", () => {
  test("hard deny: never allowed, no override, nothing to do", () => {
    const t = decisionDenial(deny("hard-deny", "rm recursively wipes /home/u."), false);
    assertClass(t, "hard-deny", /never allowed.*nothing overrides it/, /^Next: Nothing: no approval, rule or mode lets this run\.$/);
    assert.match(denialBody(t), /^rm recursively wipes \/home\/u\.$/);
    assert.doesNotMatch(t, /\/perm-approve|\/perm-auto-model|ask the user/);
    assert.equal(denialClassOf(decisionDenial(deny("self-protection", "write would change auto mode's own configuration."), false)), "hard-deny");
    // Asking to leave the sandbox changes nothing about a command denied everywhere.
    const esc = escalationDenial(t);
    assertClass(esc, "hard-deny", /never allowed/, /^Next: Nothing/);
    assert.match(esc, /denied wherever it runs: rm recursively wipes/);
  });

  test("a deny rule: the user's own rule, which only they can change", () => {
    const t = decisionDenial(deny("user-deny-rule", "matches the deny rule bash(git push *)."), false);
    assertClass(t, "deny-rule", /deny rule/, /Only the user can change that rule.*auto-mode\.json/);
    assert.doesNotMatch(nextOf(t), /\/perm-approve/, "a deny rule is never on the approval list");
  });

  test("needs review and no reviewer is set: which reason made review necessary; /perm-auto-model or /perm-approve", () => {
    const why = "write changes .git/hooks/pre-commit, a protected path.";
    const t = decisionDenial({ route: "review", reason: "protected-path", message: why }, false);
    assertClass(t, "no-reviewer", /needs review, and no reviewer is set/, /\/perm-auto-model.*\/perm-approve/);
    assert.equal(denialBody(t), `Why it needs review: ${why}`);
    // The review path says the same, with the gate's reason.
    assert.equal(failureDenialText("not-configured", why), t);
    assert.equal(noReviewerDenial(why), t);
  });

  test("the reviewer judged it risky: its rationale; /perm-approve, or only break glass for a critical verdict", () => {
    const t = verdictDenialText(verdict("high", "deletes data the user never asked to delete"));
    assertClass(t, "reviewer-denied", /the reviewer judged it too risky/, /^Next: The user can allow this exact call once with \/perm-approve\.$/);
    assert.match(denialBody(t), /rationale \(risk high, user authorization low\): deletes data the user never asked to delete\./);
    const critical = verdictDenialText(verdict("critical", "sends the SSH keys away"));
    assertClass(critical, "reviewer-denied", /too risky/, /cannot be approved: only \/perm-break-glass overrides it/);
    assert.doesNotMatch(nextOf(critical), /\/perm-approve/);
  });

  test("the reviewer was unavailable: not a risk judgement; try again, or check the reviewer", () => {
    const outages: FailureClass[] = [
      "timeout",
      "connection",
      "rate-limited",
      "provider-error",
      "malformed",
      "busy",
      "model-unavailable",
      "auth",
      "over-budget",
      "internal",
    ];
    for (const f of outages) {
      const t = failureDenialText(f, "unknown tool deploy_service.");
      assertClass(t, "reviewer-unavailable", /the reviewer was unavailable \(this is not a risk judgement\)/, /\/perm-auto-model|\/login|maxInputTokens/);
      assert.doesNotMatch(t, /risk (low|medium|high|critical)|too risky/, f);
    }
    assert.match(nextOf(failureDenialText("timeout")), /may pass if tried again later.*check it with \/perm-auto-model/);
    // An internal failure has no approval (grants/overrides.ts): only the retry is offered.
    assert.doesNotMatch(nextOf(failureDenialText("internal")), /\/perm-approve/);
  });

  test("automatic review paused: not a risk judgement; a new user message resumes it", () => {
    const t = failureDenialText("paused");
    assertClass(t, "review-paused", /paused for this turn \(this is not a risk judgement\)/, /resumes when the user sends a new message.*\/perm-approve/);
  });

  test("held staged effects: what is held and why; /perm-approve applies exactly them", () => {
    const counts = { created: 0, modified: 1, deleted: 0, gitChanged: 0 };
    const judgement = {
      verdict: "hold",
      ops: [],
      held: [{ kind: "protected-name", path: "/ws/.git/config", entry: ".git" }],
      conflicts: [],
      skipped: [],
      counts,
      smallLoss: [],
    } as const;
    const held = (extra: Partial<Extract<EffectReport, { outcome: "discarded" }>>): string =>
      reportText({ outcome: "discarded", why: "held", detail: "", judgement, ...extra } as EffectReport, "/ws");
    const t = held({ rationale: "it rewrites git's own configuration", kept: { command: "x", summary: "", apply: async () => ({}) as never, discard() {} } });
    assertClass(t, "held-effects", /changes are held, not applied/, /exactly these changes applied.*\/perm-approve/);
    assert.match(t, /changes a protected path: \.git\/config/);
    assert.match(t, /The reviewer did not allow them: it rewrites git's own configuration\./);
    // Not kept: there is nothing left to approve, and the text does not pretend there is.
    const gone = held({ noReviewer: true, rationale: "no reviewer is configured" });
    assert.equal(denialClassOf(gone), "held-effects");
    assert.match(gone, /No reviewer is set, so held changes are not applied \(the user can choose one with \/perm-auto-model\)/);
    assert.match(nextOf(gone), /^Next: Nothing: these changes were not kept/);
  });

  test("network destination refused: which one and why; sandbox.network.allow", () => {
    const note = networkNote({
      report: { allowed: [], refused: [{ host: "api.example.com", port: 443, kind: "unlisted", detail: "", connections: 1 }] },
      networkOn: true,
      failed: true,
      needsNetwork: true,
    });
    assertClass(note, "network-refused", /network destination refused/, /sandbox\.network\.allow/);
    assert.match(note, /api\.example\.com:443 \(not in sandbox\.network\.allow\)/);
    // The proxy's own answer to the command uses the same words, in one paragraph.
    for (const kind of ["unlisted", "denied", "review-denied", "address"] as const) {
      const body = refusalText({ kind, host: "api.example.com", port: 443, detail: "x" });
      assert.ok(body.startsWith(denialHead("network-refused")), body);
      assert.match(body, /sandbox\.network\.allow/);
    }
    // A destination that does not resolve is not refused by policy: no class head, no allowlist advice.
    const far = refusalText({ kind: "unresolved", host: "nope.test", port: 443, detail: "ENOTFOUND" });
    assert.equal(denialClassOf(far), undefined);
  });

  test("auto mode cannot check it (a fault): what is wrong, and that the user fixes it", () => {
    const texts = [
      gateLoadDenial("Cannot find module"),
      gateFailureDenial("TypeError: x is undefined"),
      decisionDenial(deny("config-fault", "Auto-mode configuration /u/auto-mode.json is invalid (bad JSON); every call is denied until it is fixed."), true),
      decisionDenial({ route: "review", reason: "protected-path", message: "m." }, true),
      decisionDenial({ route: "sandbox", reason: "sandboxed", message: "runs inside the sandbox." }, false),
      decisionDenial(deny("sandbox-unavailable", "The sandbox is unavailable, so auto mode runs no shell commands."), false),
      decisionDenial(deny("untrusted-install", "auto mode is running from /ws/pi-auto-mode, ..."), false),
    ];
    for (const t of texts)
      assertClass(t, "cannot-check", /cannot check it right now \(a fault, not a risk judgement\)/, /The user can fix what is named above/);
  });

  test("not admitted as issued: why, and how to issue it again", () => {
    const cases: Array<[string, RegExp]> = [
      [concurrentDenial("write", { tool: "bash", mayChangeFiles: true }), /Issue this call again on its own, after the other call has finished/],
      [bindingDenialText("the call's arguments"), /Issue the call again if it is still needed/],
      [failureDenialText("aborted"), /Issue the call again if it is still needed/],
      [escalationInvalidDenial("sandbox_permissions needs a justification"), /Correct the request/],
      [decisionDenial(deny("uncontained-shell", "powershell runs a shell."), false), /through the bash tool/],
      [decisionDenial(deny("unsupported-input", "The tool input cannot be judged: too deep."), false), /input auto mode can judge/],
      [ticketDenial("missing"), /Issue the call again/],
      [ticketDenial("changed"), /Issue the call again/],
      [ticketDenial("conflict"), /Issue each call again on its own/],
    ];
    for (const [t, next] of cases) assertClass(t, "reissue", /not admitted as it was issued \(not a risk judgement\)/, next);
  });
});

describe("the class table", () => {
  test("every class has its own heading, a label and a next step; a text names exactly one", () => {
    const headings = new Set(DENIAL_CLASS_NAMES.map((c) => DENIAL_CLASSES[c].heading));
    assert.equal(headings.size, DENIAL_CLASS_NAMES.length);
    for (const c of DENIAL_CLASS_NAMES) {
      const w = DENIAL_CLASSES[c];
      assert.ok(w.label && w.next, c);
      assert.equal(denialClassOf(`${denialHead(c)}\nwhy\nNext: x`), c);
    }
    assert.equal(denialClassOf("Denied by something else."), undefined);
    assert.equal(denialClassOf(`ok\n${denialHead("hard-deny")}`), undefined, "only a text that opens with the head");
  });

  test("the README's table and the json event's keys name every class as the texts do", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    for (const c of DENIAL_CLASS_NAMES) {
      assert.ok(readme.includes(DENIAL_CLASSES[c].heading.split(" (")[0]!), `README names ${c}: ${DENIAL_CLASSES[c].heading}`);
      assert.ok(readme.includes(`\`${c}\``), `README lists the key ${c}`);
    }
  });

  test("a body quoted from one denial into another loses the first's head and next step", () => {
    const inner = verdictDenialText(verdict("medium", "pushes to main"));
    const outer = escalationDenial(inner);
    assert.equal(denialClassOf(outer), "reviewer-denied");
    assert.equal(outer.split("\n").filter((l) => l.startsWith(HEAD)).length, 1);
    assert.equal(outer.split("\n").filter((l) => l.startsWith("Next: ")).length, 1);
    assert.match(nextOf(outer), /inside the sandbox without sandbox_permissions.*\/perm-approve/);
  });
});

describe("a hard deny never says to ask the user", () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "pi-auto-mode-denial-")));
  after(() => rmSync(root, { recursive: true, force: true }));
  const home = join(root, "home");
  const ws = join(home, "ws");
  const agentDir = join(home, ".pi", "agent");
  mkdirSync(ws, { recursive: true });
  mkdirSync(agentDir, { recursive: true });

  test("the real gate's hard denies, plain and as escalations, and the class's own words", () => {
    const gate = prepareGate({ cwd: ws, home, agentDir, defaultTmpRoot: join(root, "tmp"), selfPaths: [join(agentDir, "auto-mode.json")] });
    const calls: Array<[string, unknown]> = [
      ["bash", { command: "rm -rf ~" }],
      ["bash", { command: "rm -rf /" }],
      ["bash", { command: "dd if=/dev/zero of=/dev/sda" }],
      ["bash", { command: "mkfs.ext4 /dev/sda1" }],
      ["write", { path: join(agentDir, "auto-mode.json"), content: "{}" }],
    ];
    let seen = 0;
    for (const [tool, input] of calls) {
      const d = decide(tool, input, gate, "sandboxed").decision;
      if (d.route !== "deny" || denialClassOf(decisionDenial(d, false)) !== "hard-deny") continue;
      seen++;
      for (const t of [decisionDenial(d, false), escalationDenial(decisionDenial(d, false))]) {
        assert.equal(denialClassOf(t), "hard-deny", t);
        assert.doesNotMatch(t, /ask the user|run it themselves|\/perm-approve/i, t);
      }
    }
    assert.ok(seen >= 4, `${seen} of the calls are hard denies`);
    assert.doesNotMatch(Object.values(DENIAL_CLASSES["hard-deny"]).join(" "), /ask the user|the user can/i);
  });

  test("no text of any class ends with asking the user to run it themselves", () => {
    const all = [
      ...DENIAL_CLASS_NAMES.map((c) => Object.values(DENIAL_CLASSES[c]).join(" ")),
      decisionDenial({ route: "review", reason: "destructive", message: "m." }, false),
      verdictDenialText(verdict("low", "r")),
      failureDenialText("timeout"),
    ];
    for (const t of all) assert.doesNotMatch(t, /run it themselves/, t);
  });
});
