// How a denial reaches a person: in the TUI under a "Blocked by auto mode" head (a tool renderer
// over every tool's own), and in a headless run as one stderr line and, in json and rpc mode, a
// pi-auto-mode/denials entry per run. The real CLI runs are in test/e2e/pi-cli.test.ts.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ExtensionAPI, Theme, ToolRendererResolver, ToolRenderers } from "@earendil-works/pi-coding-agent";
import { decisionDenial } from "../../src/policy/denial.ts";
import { failureDenialText } from "../../src/review/failure.ts";
import { blockedLines, blockedView, registerDenialRenderer, wrap } from "../../src/tools/denial-render.ts";
import { createDenialTally, DENIALS_ENTRY_TYPE, registerDenialSummary, summaryLine } from "../../src/tools/denial-summary.ts";

const hardDeny = decisionDenial({ route: "deny", reason: "hard-deny", message: "rm recursively wipes /home/u." }, false);
const noReviewer = decisionDenial({ route: "review", reason: "protected-path", message: "write changes .git/hooks/pre-commit, a protected path." }, false);

type Handler = (event: unknown, ctx: unknown) => unknown;

/** The part of ExtensionAPI these modules use, recording what they do. */
function fakePi() {
  const handlers = new Map<string, Handler[]>();
  const resolvers: ToolRendererResolver[] = [];
  const entries: Array<{ type: string; data: unknown }> = [];
  const pi = {
    on: (name: string, h: Handler) => void handlers.set(name, [...(handlers.get(name) ?? []), h]),
    registerToolRenderer: (r: ToolRendererResolver) => void resolvers.push(r),
    appendEntry: (type: string, data: unknown) => void entries.push({ type, data }),
  } as unknown as ExtensionAPI;
  const emit = async (name: string, ctx: unknown = {}) => {
    for (const h of handlers.get(name) ?? []) await h({ type: name }, ctx);
  };
  return { pi, resolvers, entries, emit };
}

const theme = { fg: (c: string, s: string) => `<${c}>${s}</${c}>`, bold: (s: string) => `*${s}*` } as unknown as Theme;
const context = (isError: boolean) => ({ isError }) as Parameters<NonNullable<ToolRenderers["renderResult"]>>[3];
const textResult = (text: string) => ({ content: [{ type: "text" as const, text }], details: {} });

describe("the TUI: a blocked call under a head of its own", () => {
  test("the view names the class, the reason and the next step; the model's own instruction is left out", () => {
    const v = blockedView(hardDeny)!;
    assert.equal(v.head, "Blocked by auto mode — never allowed, and nothing overrides it");
    assert.equal(v.body, "rm recursively wipes /home/u.");
    assert.equal(v.next, "Next: Nothing: no approval, rule or mode lets this run.");
    assert.equal(blockedView("ENOENT: no such file"), undefined);
  });

  test("a blocked result is drawn with the head in the error colour; any other result as its tool draws it", () => {
    const { pi, resolvers } = fakePi();
    registerDenialRenderer(pi);
    const drawn: string[] = [];
    const base: ToolRenderers = {
      renderResult: (r) => {
        drawn.push((r.content[0] as { text: string }).text);
        return { render: () => ["base"], invalidate() {} };
      },
    };
    const r = resolvers[0]!("write", () => base)!;
    const blocked = r.renderResult!(textResult(noReviewer), { expanded: false, isPartial: false }, theme, context(true));
    const lines = blocked.render(200);
    assert.equal(lines[0], "<error>*Blocked by auto mode — needs review, and no reviewer is set*</error>");
    assert.match(lines.join("\n"), /<text>Why it needs review: write changes \.git\/hooks\/pre-commit/);
    assert.match(lines.join("\n"), /<accent>Next: The user can choose a reviewer with \/perm-auto-model/);
    assert.deepEqual(drawn, [], "the tool's own renderer is not asked for a blocked call");
    // A failure that is not auto mode's, and a success, are the tool's to draw.
    r.renderResult!(textResult("ENOENT"), { expanded: false, isPartial: false }, theme, context(true));
    r.renderResult!(textResult(hardDeny), { expanded: false, isPartial: false }, theme, context(false));
    assert.deepEqual(drawn, ["ENOENT", hardDeny]);
  });

  test("a tool without renderers still gets the head, and plain text otherwise", () => {
    const { pi, resolvers } = fakePi();
    registerDenialRenderer(pi);
    const r = resolvers[0]!("mcp__jira__create", () => undefined)!;
    assert.match(r.renderResult!(textResult(hardDeny), { expanded: false, isPartial: false }, theme, context(true)).render(80)[0]!, /Blocked by auto mode/);
    assert.deepEqual(r.renderResult!(textResult("one\ntwo"), { expanded: true, isPartial: false }, theme, context(false)).render(80), [
      "<toolOutput>one</toolOutput>",
      "<toolOutput>two</toolOutput>",
    ]);
  });

  test("lines fit the width the TUI gives", () => {
    for (const width of [8, 20, 41, 80]) {
      const lines = blockedLines(blockedView(noReviewer)!, width, (_t, s) => s);
      assert.ok(lines.length > 1);
      for (const l of lines) assert.ok([...l].length <= width, `${width}: ${l}`);
    }
    assert.deepEqual(wrap("aaaaaaaaaaaa bb", 5), ["aaaaa", "aaaaa", "aa bb"]);
    assert.deepEqual(wrap("漢字漢字", 4), ["漢字", "漢字"]);
  });
});

describe("headless runs: the denials summary", () => {
  test("counts by class, from the gate's blocks, held changes and policy refusals of destinations", () => {
    const t = createDenialTally();
    t.gate({ block: true, reason: hardDeny });
    t.gate({ block: true, reason: noReviewer });
    t.gate({ block: true, reason: failureDenialText("timeout") });
    assert.equal(t.gate(undefined), undefined, "an admitted call passes through");
    t.held();
    t.network({
      allowed: [],
      refused: [
        { host: "a.test", port: 443, kind: "unlisted", detail: "", connections: 1 },
        { host: "b.test", port: 443, kind: "unresolved", detail: "ENOTFOUND", connections: 1 },
      ],
    });
    const c = t.session();
    assert.deepEqual(c, {
      denied: 5,
      byClass: { "hard-deny": 1, "no-reviewer": 1, "reviewer-unavailable": 1, "held-effects": 1, "network-refused": 1 },
    });
    assert.equal(
      summaryLine(c),
      "pi-auto-mode: 5 denials in this session (never allowed 1, needs review, no reviewer 1, reviewer unavailable 1, changes held 1, network refused 1)",
    );
    assert.equal(summaryLine({ denied: 0, byClass: {} }), "pi-auto-mode: no denials in this session");
    assert.equal(summaryLine({ denied: 1, byClass: { "hard-deny": 1 } }), "pi-auto-mode: 1 denial in this session (never allowed 1)");
  });

  test("json and rpc: each run ends with an entry of that run's denials and the session's", async () => {
    const { pi, entries, emit } = fakePi();
    const tally = registerDenialSummary(pi, () => 7);
    for (const mode of ["json", "rpc", "tui", "print"]) {
      await emit("agent_start");
      tally.gate({ block: true, reason: hardDeny });
      await emit("agent_settled", { mode });
    }
    assert.deepEqual(
      entries.map((e) => e.type),
      [DENIALS_ENTRY_TYPE, DENIALS_ENTRY_TYPE],
    );
    assert.deepEqual(entries[1]!.data, {
      run: { denied: 1, byClass: { "hard-deny": 1 } },
      session: { denied: 2, byClass: { "hard-deny": 2 } },
      at: 7,
    });
  });

  test("print and json: the session's end writes one line to stderr; the TUI and rpc write none", async () => {
    const written: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((s: string) => (written.push(String(s)), true)) as typeof process.stderr.write;
    try {
      for (const mode of ["print", "tui", "rpc", "json"]) {
        const { pi, emit } = fakePi();
        const tally = registerDenialSummary(pi);
        tally.gate({ block: true, reason: noReviewer });
        await emit("session_shutdown", { mode });
      }
    } finally {
      process.stderr.write = write;
    }
    assert.deepEqual(written, [
      "pi-auto-mode: 1 denial in this session (needs review, no reviewer 1)\n",
      "pi-auto-mode: 1 denial in this session (needs review, no reviewer 1)\n",
    ]);
  });
});
