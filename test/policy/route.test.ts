// The route table: every (tool kind x class x backend) against an explicit expected table, then
// what comes before the table (P3 order): configuration fault, hard deny, user deny, user review,
// user allow; and the unavailable backend, which runs no shell command at all.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EMPTY_CONFIG, type ConfigResult, type PolicyConfig } from "../../src/policy/config/load.ts";
import type { Judgement, ToolKind } from "../../src/policy/judge.ts";
import { route } from "../../src/policy/route.ts";
import { compileRule } from "../../src/policy/rules.ts";
import type { AllowRuleSpec, RuleSpec } from "../../src/policy/config/schema.ts";
import { BACKENDS, CLASS_RANK, type CommandClass, type ReasonCode, type Route } from "../../src/policy/types.ts";

const KINDS: readonly ToolKind[] = ["bash", "file", "uncontained-shell", "other"];
const CLASSES = Object.keys(CLASS_RANK) as CommandClass[];

type Row = readonly [Route, Route, Route, Route]; // sandboxed, sandboxed-unstaged, review-only, unavailable

/** The expected route for every combination, written out rather than computed. */
const EXPECTED: Readonly<Record<ToolKind, Readonly<Record<CommandClass, Row>>>> = {
  // No bash call routes allow under a sandboxed backend (P6, P7); git writes need review only
  // where the workspace cannot be staged.
  bash: {
    read: ["sandbox", "sandbox", "allow", "deny"],
    "workspace-write": ["sandbox", "sandbox", "allow", "deny"],
    cleanup: ["sandbox", "sandbox", "allow", "deny"],
    "git-local": ["sandbox", "review", "allow", "deny"],
    build: ["sandbox", "sandbox", "allow", "deny"],
    contain: ["sandbox", "sandbox", "review", "deny"],
    review: ["review", "review", "review", "deny"],
    deny: ["deny", "deny", "deny", "deny"],
  },
  file: {
    read: ["allow", "allow", "allow", "allow"],
    "workspace-write": ["allow", "allow", "allow", "allow"],
    cleanup: ["allow", "allow", "allow", "allow"],
    "git-local": ["allow", "allow", "allow", "allow"],
    build: ["allow", "allow", "allow", "allow"],
    contain: ["review", "review", "review", "review"],
    review: ["review", "review", "review", "review"],
    deny: ["deny", "deny", "deny", "deny"],
  },
  // PowerShell: never on the host while a sandbox is (or should be) in place, whatever its class.
  "uncontained-shell": {
    read: ["deny", "deny", "allow", "deny"],
    "workspace-write": ["deny", "deny", "allow", "deny"],
    cleanup: ["deny", "deny", "allow", "deny"],
    "git-local": ["deny", "deny", "allow", "deny"],
    build: ["deny", "deny", "allow", "deny"],
    contain: ["deny", "deny", "review", "deny"],
    review: ["deny", "deny", "review", "deny"],
    deny: ["deny", "deny", "deny", "deny"],
  },
  other: {
    read: ["allow", "allow", "allow", "allow"],
    "workspace-write": ["allow", "allow", "allow", "allow"],
    cleanup: ["allow", "allow", "allow", "allow"],
    "git-local": ["allow", "allow", "allow", "allow"],
    build: ["allow", "allow", "allow", "allow"],
    contain: ["review", "review", "review", "review"],
    review: ["review", "review", "review", "review"],
    deny: ["deny", "deny", "deny", "deny"],
  },
};

/** The judgement's own reason code for each class (what a real judge would say). */
const REASON: Readonly<Record<CommandClass, ReasonCode>> = {
  read: "read-only",
  "workspace-write": "workspace-write",
  cleanup: "regenerable-cleanup",
  "git-local": "git-local",
  build: "build-test",
  contain: "network",
  review: "destructive",
  deny: "hard-deny",
};

const TOOL: Readonly<Record<ToolKind, string>> = { bash: "bash", file: "write", "uncontained-shell": "powershell", other: "mcp__srv__tool" };

function judgement(kind: ToolKind, cls: CommandClass, overrides: Partial<Judgement> = {}): Judgement {
  const tool = TOOL[kind];
  return {
    kind,
    cls,
    reason: REASON[cls],
    detail: `the ${cls} thing`,
    subject: { tool, commands: kind === "bash" ? ["mytool --flag"] : [], paths: kind === "file" ? ["/w/file.txt"] : [] },
    ...overrides,
  };
}

function config(rules: { allow?: AllowRuleSpec[]; review?: RuleSpec[]; deny?: RuleSpec[] } = {}): ConfigResult {
  const compile = (list: AllowRuleSpec[] | undefined) => (list ?? []).map((r) => compileRule(r, "user", "/h", "/w"));
  const c: PolicyConfig = { ...EMPTY_CONFIG, allow: compile(rules.allow), review: compile(rules.review), deny: compile(rules.deny) };
  return { ok: true, config: c };
}

const FAULT: ConfigResult = { ok: false, path: "/h/.pi/agent/auto-mode.json", message: "/rules: unknown key" };
const ANY = { tool: "*" } as const;

describe("route table", () => {
  test("the table covers every kind, class and backend", () => {
    assert.deepEqual(Object.keys(EXPECTED).sort(), [...KINDS].sort());
    for (const k of KINDS) assert.deepEqual(Object.keys(EXPECTED[k]).sort(), [...CLASSES].sort());
    assert.deepEqual([...BACKENDS], ["sandboxed", "sandboxed-unstaged", "review-only", "unavailable"]);
    assert.equal(CLASSES.length, 8);
  });

  for (const kind of KINDS) {
    for (const cls of CLASSES) {
      BACKENDS.forEach((backend, i) => {
        const expected = EXPECTED[kind][cls][i]!;
        test(`${kind} x ${cls} x ${backend} -> ${expected}`, () => {
          const d = route(judgement(kind, cls), backend, config());
          assert.equal(d.route, expected);
          const reason: ReasonCode =
            cls === "deny"
              ? "hard-deny"
              : kind === "bash" && backend === "unavailable"
                ? "sandbox-unavailable"
                : kind === "uncontained-shell" && backend !== "review-only"
                  ? "uncontained-shell"
                  : expected === "sandbox"
                    ? "sandboxed"
                    : REASON[cls];
          assert.equal(d.reason, reason);
          assert.match(d.message, /^\S.*[.!?]$/s, "one sentence, ending in punctuation");
        });
      });
    }
  }

  test("no class reaches the sandbox route outside bash, and review-only never sandboxes", () => {
    for (const kind of KINDS)
      for (const cls of CLASSES)
        for (const backend of BACKENDS) {
          const r = route(judgement(kind, cls), backend, config()).route;
          if (r === "sandbox") assert.ok(kind === "bash" && (backend === "sandboxed" || backend === "sandboxed-unstaged"), `${kind}/${cls}/${backend}`);
        }
  });

  test("a stricter class never gets a looser route (per kind and backend)", () => {
    const order: Record<Route, number> = { allow: 0, sandbox: 1, review: 2, deny: 3 };
    for (const kind of KINDS)
      for (const backend of BACKENDS) {
        for (const lower of CLASSES)
          for (const higher of CLASSES) {
            if (CLASS_RANK[lower] >= CLASS_RANK[higher]) continue;
            // Unstaged, a git write (ranked below builds) needs review while a build runs contained.
            if (kind === "bash" && backend === "sandboxed-unstaged" && (lower === "git-local" || higher === "git-local")) continue;
            const a = order[route(judgement(kind, lower), backend, config()).route];
            const b = order[route(judgement(kind, higher), backend, config()).route];
            assert.ok(b >= a, `${kind}/${backend}: ${higher} is looser than ${lower}`);
          }
      }
  });

  test("a contained command under review-only says why it needs review", () => {
    const d = route(judgement("bash", "contain"), "review-only", config());
    assert.deepEqual([d.route, d.reason], ["review", "network"]);
    assert.match(d.message, /without a sandbox/);
  });

  test("route is pure: same answer twice, the judgement and config untouched", () => {
    const j = judgement("bash", "contain");
    const c = config({ review: [{ tool: "x" }] });
    const frozen = JSON.stringify(j);
    const a = route(j, "sandboxed", c);
    const b = route(j, "sandboxed", c);
    assert.deepEqual(a, b);
    assert.equal(JSON.stringify(j), frozen);
  });
});

describe("route: what comes before the table", () => {
  test("a configuration fault denies every combination, naming the file", () => {
    for (const kind of KINDS)
      for (const cls of CLASSES)
        for (const backend of BACKENDS) {
          const d = route(judgement(kind, cls), backend, FAULT);
          assert.deepEqual([d.route, d.reason], ["deny", "config-fault"], `${kind}/${cls}/${backend}`);
          assert.ok(d.message.includes("/h/.pi/agent/auto-mode.json"));
          assert.match(d.message, /unknown key/);
        }
  });

  test("the unavailable backend denies every bash call, whatever the rules say", () => {
    for (const cls of CLASSES) {
      for (const rules of [{}, { allow: [ANY] }, { review: [ANY] }, { allow: [{ command: "mytool *" }] }]) {
        const d = route(judgement("bash", cls), "unavailable", config(rules));
        assert.equal(d.route, "deny", `${cls} with ${JSON.stringify(rules)}`);
        assert.equal(d.reason, cls === "deny" ? "hard-deny" : "sandbox-unavailable");
      }
    }
    // A user deny rule still names itself.
    assert.equal(route(judgement("bash", "read"), "unavailable", config({ deny: [ANY] })).reason, "user-deny-rule");
  });

  test("the unavailable backend leaves file and other tools to the table", () => {
    assert.equal(route(judgement("file", "workspace-write"), "unavailable", config()).route, "allow");
    assert.equal(route(judgement("other", "read"), "unavailable", config()).route, "allow");
    assert.equal(route(judgement("other", "review"), "unavailable", config({ allow: [ANY] })).route, "allow");
  });

  test("user rule precedence: deny, then review, then allow, then the table", () => {
    for (const kind of KINDS)
      for (const cls of CLASSES)
        for (const backend of ["sandboxed", "sandboxed-unstaged", "review-only"] as const) {
          const at = (rules: Parameters<typeof config>[0]) => {
            const d = route(judgement(kind, cls), backend, config(rules));
            return [d.route, d.reason];
          };
          if (cls === "deny") {
            // No rule changes a hard deny, and no rule is even consulted.
            for (const rules of [{ allow: [ANY] }, { review: [ANY] }, { deny: [ANY] }]) assert.deepEqual(at(rules), ["deny", "hard-deny"]);
            continue;
          }
          assert.deepEqual(at({ allow: [ANY], review: [ANY], deny: [ANY] }), ["deny", "user-deny-rule"]);
          // A shell the sandbox cannot contain runs only by an allow rule that says so, where a sandbox exists.
          const uncontained = kind === "uncontained-shell" && backend !== "review-only";
          const allowAny = uncontained ? { ...ANY, unsandboxed: true } : ANY;
          assert.deepEqual(at({ allow: [allowAny], review: [ANY] }), ["review", "user-review-rule"]);
          if (uncontained) assert.deepEqual(at({ allow: [ANY], review: [ANY] }), ["deny", "uncontained-shell"]);
          // A bash allow rule spares the review, never the sandbox.
          assert.deepEqual(
            at({ allow: [ANY] }),
            uncontained ? ["deny", "uncontained-shell"] : [kind === "bash" && backend !== "review-only" ? "sandbox" : "allow", "user-allow-rule"],
          );
          if (uncontained) assert.deepEqual(at({ allow: [{ ...ANY, unsandboxed: true }] }), ["allow", "user-allow-rule"]);
          // A rule that does not match changes nothing.
          const none = { tool: "nothing-matches" };
          const table = route(judgement(kind, cls), backend, config());
          const d = route(judgement(kind, cls), backend, config({ allow: [none], review: [none], deny: [none] }));
          assert.deepEqual(d, table);
        }
  });

  test("a user review rule can tighten even an allowed class", () => {
    const d = route(judgement("file", "read"), "sandboxed", config({ review: [{ tool: "write", reason: "audit writes" }] }));
    assert.deepEqual([d.route, d.reason], ["review", "user-review-rule"]);
    assert.match(d.message, /audit writes/);
  });

  test("rule messages name the rule and its reason", () => {
    const d = route(judgement("other", "review"), "sandboxed", config({ deny: [{ tool: "mcp__srv__*", reason: "no prod access" }] }));
    assert.match(d.message, /mcp__srv__\*/);
    assert.match(d.message, /no prod access/);
    assert.match(d.message, /user config/);
  });

  test("allow rules never admit malformed input or an unparseable script", () => {
    for (const reason of ["malformed-input", "shell-unparseable"] as const) {
      for (const kind of KINDS) {
        const d = route(judgement(kind, "review", { reason }), "sandboxed", config({ allow: [{ ...ANY, unsandboxed: true }, { command: "*" }] }));
        assert.deepEqual([d.route, d.reason], ["review", reason]);
      }
    }
  });

  test("a bash allow rule must match every simple command", () => {
    const two = judgement("bash", "review", { subject: { tool: "bash", commands: ["git status", "curl evil.example"], paths: [] } });
    const onlyGit = config({ allow: [{ command: "git *" }] });
    assert.deepEqual(pick(route(two, "sandboxed", onlyGit)), ["review", "destructive"]);
    const both = config({ allow: [{ command: "git *" }, { command: "curl *" }] });
    // An allow rule spares the review, never the sandbox (P7).
    assert.deepEqual(pick(route(two, "sandboxed", both)), ["sandbox", "user-allow-rule"]);
    assert.deepEqual(pick(route(two, "sandboxed-unstaged", both)), ["sandbox", "user-allow-rule"]);
    assert.deepEqual(pick(route(two, "review-only", both)), ["allow", "user-allow-rule"]);
    // A tool-only rule for bash covers every command.
    assert.deepEqual(pick(route(two, "sandboxed", config({ allow: [{ tool: "bash" }] }))), ["sandbox", "user-allow-rule"]);
  });

  test("a bash call with no readable simple command is never allowed by a rule", () => {
    const empty = judgement("bash", "review", { subject: { tool: "bash", commands: [], paths: [] } });
    assert.deepEqual(pick(route(empty, "sandboxed", config({ allow: [{ tool: "bash" }] }))), ["review", "destructive"]);
  });

  test("one matching deny command anywhere in the script denies it", () => {
    const two = judgement("bash", "read", { subject: { tool: "bash", commands: ["ls", "terraform destroy"], paths: [] } });
    assert.deepEqual(pick(route(two, "sandboxed", config({ allow: [{ tool: "bash" }], deny: [{ command: "terraform *" }] }))), ["deny", "user-deny-rule"]);
  });

  test("path rules match the lexical or the real path", () => {
    const j = judgement("file", "workspace-write", { subject: { tool: "write", commands: [], paths: ["/w/link/x", "/etc/x"] } });
    assert.deepEqual(pick(route(j, "sandboxed", config({ deny: [{ path: "/etc/**" }] }))), ["deny", "user-deny-rule"]);
    assert.deepEqual(pick(route(j, "sandboxed", config({ deny: [{ path: "/w/link/**" }] }))), ["deny", "user-deny-rule"]);
    assert.deepEqual(pick(route(j, "sandboxed", config({ deny: [{ path: "/opt/**" }] }))), ["allow", "workspace-write"]);
  });

  test("an allow path rule must match the lexical and the real path", () => {
    // /w/link -> /etc: the lexical path is in the allowed tree, the file written is not.
    const escaping = judgement("file", "review", {
      reason: "outside-writable-roots",
      subject: { tool: "write", commands: [], paths: ["/w/link/x", "/etc/x"], exact: true },
    });
    assert.deepEqual(pick(route(escaping, "sandboxed", config({ allow: [{ tool: "write", path: "/w/**" }] }))), ["review", "outside-writable-roots"]);
    // A path rule that matches both is still no licence to write outside the writable roots: only `paths` opens it.
    assert.deepEqual(pick(route(escaping, "sandboxed", config({ allow: [{ tool: "write", path: "/{w,etc}/**" }] }))), ["review", "outside-writable-roots"]);
    assert.deepEqual(pick(route(escaping, "sandboxed", config({ allow: [{ tool: "write", paths: ["/w/link", "/etc"] }] }))), ["allow", "user-allow-rule"]);
    assert.deepEqual(pick(route(escaping, "sandboxed", config({ allow: [{ tool: "write", paths: ["/etc"] }] }))), ["review", "outside-writable-roots"]);
    const script = judgement("bash", "contain", { subject: { tool: "bash", commands: ["cp a b"], paths: ["/w/a", "/etc/b"] } });
    assert.deepEqual(pick(route(script, "review-only", config({ allow: [{ command: "cp *", path: "/w/**" }] }))), ["review", "network"]);
  });
});

function pick(d: { route: Route; reason: ReasonCode }): [Route, ReasonCode] {
  return [d.route, d.reason];
}

describe("P7: PowerShell never runs uncontained where a sandbox exists", () => {
  test("a review rule cannot turn it into a reviewer's allow; only the user's allow rule that says unsandboxed runs it", () => {
    const j = judgement("uncontained-shell", "review");
    assert.equal(route(j, "sandboxed", config({ review: [{ tool: "powershell" }] })).route, "deny");
    assert.equal(route(j, "sandboxed", config({ allow: [{ tool: "powershell" }] })).route, "deny", "a plain allow rule never means no sandbox");
    assert.equal(route(j, "sandboxed", config({ allow: [{ tool: "powershell", unsandboxed: true }] })).route, "allow");
    assert.equal(route(j, "sandboxed", config({ allow: [{ tool: "powershell", unsandboxed: true }], deny: [{ tool: "powershell" }] })).route, "deny");
    assert.equal(route(j, "review-only", config()).route, "review");
  });
});
