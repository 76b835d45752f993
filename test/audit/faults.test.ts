// Audit faults through a real AgentSession (issue 15): a locked, truncated, garbage or read-only
// database, a read-only folder, a folder that is a file, a missing key, a full disk. Each time the
// gate's decisions are those of a session whose audit works, the user gets exactly one warning
// (also after more decisions), the audit is off for the process, and a database that was there is
// left byte for byte as it was (never deleted or rebuilt).
//
// Run as root, and (from the root run) once more as nobody (uid 65534, via setpriv): root ignores
// file modes, so the read-only cases run only in that pass and say so when skipped as root.

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";
import { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { sharedAuditStore } from "../../src/audit/recorder.ts";
import { auditDir, AuditStore, DATABASE_FILE, KEY_FILE } from "../../src/audit/store.ts";
import { processGlobalState } from "../../src/state/global.ts";
import { makeRoot, type PiHarness, toolResults } from "../helpers/pi-session.ts";
import { reviewOnlySessions } from "../helpers/review-only.ts";
import { canRunAsNobody, runAsNobody } from "../helpers/nobody-pass.ts";
import { recordingUi, type RecordingUi } from "../helpers/ui.ts";

const HERE = fileURLToPath(import.meta.url);
const REPO = fileURLToPath(new URL("../../", import.meta.url));
const CHILD_FLAG = "PI_AUTO_MODE_AUDIT_FAULTS_AS_NOBODY";
const IS_ROOT = process.getuid?.() === 0;
const ROOT_IGNORES_MODES = "as root file modes do not stop a write: this case runs in the nobody pass (the last test of this file)";

const call = (name: string, args: Parameters<typeof fauxToolCall>[1]) => fauxAssistantMessage([fauxToolCall(name, args)], { stopReason: "toolUse" });
const CALLS: Array<[string, Parameters<typeof fauxToolCall>[1]]> = [
  ["bash", { command: "rm -rf ~" }],
  ["bash", { command: "ls" }],
  ["read", { path: "notes.txt" }],
];

interface Outcome {
  readonly decisions: Array<[boolean, string]>;
  readonly warnings: string[];
}

const pi = reviewOnlySessions();
after(() => processGlobalState().setEnabled(true));

/** A workspace and agent dir, with `prepare` run on the audit folder before Pi starts. */
async function session(prepare: (dir: string) => void): Promise<{ h: PiHarness; rec: RecordingUi; dir: string }> {
  const { root, cwd, agentDir } = makeRoot("pi-auto-mode-audit-fault-");
  writeFileSync(join(cwd, "notes.txt"), "x\n");
  const dir = auditDir(agentDir);
  prepare(dir);
  const rec = recordingUi();
  const h = await pi({ root, cwd, uiContext: rec.ui, mode: "rpc", responses: [] });
  return { h, rec, dir };
}

/** Two prompts of the same calls, each followed by a flush (session_shutdown flushes; the second proves the warning is not repeated). */
async function drive(h: PiHarness, rec: RecordingUi): Promise<Outcome> {
  for (let i = 0; i < 2; i++) {
    h.faux.setResponses([...CALLS.map(([n, a]) => call(n, a)), fauxAssistantMessage([fauxText("done")])]);
    await h.session.prompt("go");
    await h.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" });
  }
  return {
    // Whether each call was an error, and its text's first line (the denial's head, or what the tool said).
    decisions: toolResults(h.session).map((r) => [r.isError, r.text.split("\n")[0]!.replace(h.cwd, "<cwd>")]),
    warnings: rec.notes.filter((n) => /audit/i.test(n.text)).map((n) => `${n.level}: ${n.text}`),
  };
}

const bytesOf = (dir: string): Record<string, string> =>
  Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((f) => [f, readFileSync(join(dir, f)).toString("base64")]),
  );

/** A database with a few rows, closed (no WAL left), and its key. */
function seeded(dir: string): void {
  const store = AuditStore.open({ dir, onWarning: (m) => assert.fail(m) });
  for (let i = 0; i < 50; i++)
    store.record({
      at: Date.now() - 86_400_000,
      tool: "bash",
      template: `make t${i}`,
      surface: "unknown",
      route: "allow",
      reason: "build-test",
      outcome: "ran",
    });
  store.close();
}

let baseline: Outcome | undefined;
async function expected(): Promise<Outcome> {
  if (!baseline) {
    const { h, rec, dir } = await session(() => {});
    baseline = await drive(h, rec);
    assert.deepEqual(baseline.warnings, [], "a working audit warns of nothing");
    assert.ok(sharedAuditStore(dir).enabled);
    assert.equal(
      sharedAuditStore(dir)
        .rows()
        .reduce((n, r) => n + r.count, 0),
      6,
      "the working audit counted every decision",
    );
  }
  return baseline;
}

async function faultCase(prepare: (dir: string) => void, message: RegExp, opts: { keepsBytes: boolean }) {
  const want = await expected();
  let before: Record<string, string> = {};
  const { h, rec, dir } = await session((d) => {
    prepare(d);
    if (opts.keepsBytes) before = bytesOf(d);
  });
  const got = await drive(h, rec);
  assert.deepEqual(got.decisions, want.decisions, "the decisions are those of a working audit");
  assert.deepEqual(
    want.decisions.map(([e]) => e),
    [true, false, false, true, false, false],
  );
  assert.equal(got.warnings.length, 1, got.warnings.join("\n"));
  assert.match(got.warnings[0]!, /^warning: auto mode: audit off for this session: /);
  assert.match(got.warnings[0]!, message);
  assert.equal(sharedAuditStore(dir).enabled, false, "the audit is off for the process");
  if (opts.keepsBytes) assert.deepEqual(bytesOf(dir), before, "the audit folder is as it was: nothing deleted, rebuilt or added");
  return { h, dir };
}

describe("audit faults never change a decision: one warning, audit off", () => {
  test("a database another process holds locked (SQLITE_BUSY past the busy timeout)", async () => {
    let other: DatabaseSync | undefined;
    try {
      await faultCase(
        (dir) => {
          seeded(dir);
          other = new DatabaseSync(join(dir, DATABASE_FILE));
          other.exec("BEGIN EXCLUSIVE");
        },
        /locked|busy/i,
        { keepsBytes: false },
      );
    } finally {
      other?.exec("ROLLBACK");
      other?.close();
    }
  });

  test("a truncated database", async () => {
    await faultCase(
      (dir) => {
        seeded(dir);
        truncateSync(join(dir, DATABASE_FILE), 5000);
      },
      /malformed|corrupt|not a database|disk image/i,
      { keepsBytes: true },
    );
  });

  test("a garbage database", async () => {
    await faultCase(
      (dir) => {
        seeded(dir);
        writeFileSync(join(dir, DATABASE_FILE), Buffer.alloc(8192, "garbage! "));
      },
      /not a database|malformed|corrupt/i,
      { keepsBytes: true },
    );
  });

  test("a missing key beside an existing database", async () => {
    await faultCase(
      (dir) => {
        seeded(dir);
        rmSync(join(dir, KEY_FILE));
      },
      /key is missing/,
      { keepsBytes: true },
    );
  });

  test("an audit folder that is a file", async () => {
    await faultCase(
      (dir) => {
        mkdirSync(join(dir, ".."), { recursive: true });
        writeFileSync(dir, "not a folder");
      },
      /could not open the audit store: .*(EEXIST|ENOTDIR)/,
      { keepsBytes: false },
    );
  });

  test("a full disk: the database may not grow by a page (SQLITE_FULL, what a full disk returns)", async () => {
    // What this simulates: SQLite's PRAGMA max_page_count on the store's connection, set to the
    // database's size with its last leaf page filled, so the next row needs a page the "disk"
    // refuses. SQLite reports SQLITE_FULL, the code it returns when the file system is full.
    let pages = 0;
    await faultCase(
      (dir) => {
        seeded(dir);
        const db = new DatabaseSync(join(dir, DATABASE_FILE));
        pages = (db.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
        db.exec(`PRAGMA max_page_count = ${pages}`);
        // Fill the right edge (yesterday's rows sort before today's) until a row no longer fits.
        const insert = db.prepare(
          "INSERT INTO daily (day, project, tool, template, surface, route, reason, outcome, count, reviewer_tokens, review_ms, since) VALUES (?, '', 'bash', ?, 'unknown', 'allow', 'read-only', 'ran', 1, 0, 0, 2)",
        );
        const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
        let full = false;
        for (let i = 0; i < 10_000 && !full; i++) {
          try {
            insert.run(yesterday, `~${String(i).padStart(5, "0")}`);
          } catch (e) {
            assert.match((e as Error).message, /full/);
            full = true;
          }
        }
        assert.ok(full, "the database filled up");
        db.close();
        // The process's store, opened before Pi with the same bound: the extension writes into it.
        assert.ok(sharedAuditStore(dir, { maxPages: pages }).enabled);
      },
      /could not write the audit store: database or disk is full/,
      { keepsBytes: false },
    );
  });

  test("a read-only database", { skip: IS_ROOT ? ROOT_IGNORES_MODES : undefined }, async () => {
    await faultCase(
      (dir) => {
        seeded(dir);
        chmodSync(join(dir, DATABASE_FILE), 0o400);
      },
      /the audit database is read-only \(EACCES/,
      { keepsBytes: true },
    );
  });

  test("a read-only audit folder", { skip: IS_ROOT ? ROOT_IGNORES_MODES : undefined }, async () => {
    const { dir } = await faultCase(
      (dir) => {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        chmodSync(dir, 0o500);
      },
      /EACCES|permission denied/i,
      { keepsBytes: true },
    );
    chmodSync(dir, 0o700);
  });

  test("a working audit's folder is 0700, its database, WAL, SHM and key 0600", async () => {
    await expected();
    const { h, rec, dir } = await session(() => {});
    await drive(h, rec);
    const files = readdirSync(dir).sort();
    assert.deepEqual(files, [DATABASE_FILE, `${DATABASE_FILE}-shm`, `${DATABASE_FILE}-wal`, KEY_FILE].sort());
    const mode = (p: string) => statSync(p).mode & 0o777;
    assert.equal(mode(dir), 0o700);
    for (const f of files) assert.equal(mode(join(dir, f)), 0o600, f);
  });
});

describe("the faults' other pass", () => {
  const enabled = canRunAsNobody(CHILD_FLAG);
  test("every case passes as nobody (uid 65534), the read-only ones included", {
    skip: enabled ? undefined : IS_ROOT ? "setpriv missing or already the nobody pass" : "only from a root run (this run is already unprivileged)",
  }, (t) => {
    const r = runAsNobody(t, { file: HERE, cwd: REPO, flag: CHILD_FLAG, homePrefix: "pi-auto-mode-auditpass-", unset: ["PI_CODING_AGENT_DIR"] });
    const { summary, failures } = r;
    assert.equal(r.status, 0, `the pass failed:\n${failures.join("\n")}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-2000)}`);
    assert.ok(summary.includes("# pass 9"), summary.join("\n"));
  });
});
