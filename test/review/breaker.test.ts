// P13: within one turn, 3 consecutive denials or 10 of the last 50 reviews pause automatic
// review; the next user turn starts closed again.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CLOSED, CONSECUTIVE_LIMIT, recordReview, WINDOW_LIMIT, WINDOW_SIZE, type BreakerState } from "../../src/review/breaker.ts";
import { failureDenialText } from "../../src/review/failure.ts";
import { createLimiter } from "../../src/review/limiter.ts";
import { createReviewService } from "../../src/review/service.ts";
import { action, fauxRegistry, JUDGE, VERDICT } from "../helpers/review-fixtures.ts";
import { fauxAssistantMessage } from "@earendil-works/pi-ai";
import { piReviewerModels } from "../../src/tools/reviewer-models.ts";

/** Feed a sequence ("D" denied, "A" allowed); returns the state after each step. */
function run(seq: string, from: BreakerState = CLOSED): BreakerState[] {
  const out: BreakerState[] = [];
  let s = from;
  for (const ch of seq) {
    s = recordReview(s, ch === "D");
    out.push(s);
  }
  return out;
}

describe("P13: breaker sequences", () => {
  test("the limits are 3 consecutive and 10 of the last 50", () => {
    assert.equal(CONSECUTIVE_LIMIT, 3);
    assert.equal(WINDOW_LIMIT, 10);
    assert.equal(WINDOW_SIZE, 50);
  });

  test("consecutive: two denials stay closed, the third trips", () => {
    const states = run("DDD");
    assert.equal(states[1]!.tripped, undefined);
    assert.equal(states[2]!.tripped, "consecutive");
  });

  test("consecutive: an allow in between resets the count", () => {
    const states = run("DDADDADDA");
    assert.equal(states.at(-1)!.tripped, undefined);
    assert.equal(states.at(-1)!.consecutive, 0);
  });

  test("window: the tenth denial among the last 50 trips, the ninth does not", () => {
    const states = run("DDA".repeat(5)); // 10 denials, never 3 in a row
    const tenth = states.findIndex((s) => s.window.filter(Boolean).length === 10);
    assert.equal(states[tenth - 1]!.tripped, undefined, "nine denials: still closed");
    assert.equal(states[tenth]!.tripped, "window");
  });

  test("window: a denial 51 reviews back no longer counts", () => {
    // Nine denials at positions 0, 5, ..., 40, then allows up to position 49: 50 reviews, 9 denials.
    const prefix = Array.from({ length: 50 }, (_, i) => (i % 5 === 0 && i <= 40 ? "D" : "A")).join("");
    const atLimit = run(prefix);
    assert.equal(atLimit.at(-1)!.window.length, 50);
    assert.equal(atLimit.at(-1)!.tripped, undefined);
    // Review 51 is a denial, but the first denial (position 0) just left the window: 9 again.
    const slid = run("D", atLimit.at(-1)!);
    assert.equal(slid[0]!.window.filter(Boolean).length, 9);
    assert.equal(slid[0]!.tripped, undefined);
    // Whereas a tenth denial while all nine are still inside the window trips.
    const inside = run(prefix.slice(0, 49) + "D");
    assert.equal(inside.at(-1)!.window.filter(Boolean).length, 10);
    assert.equal(inside.at(-1)!.tripped, "window");
  });

  test("once tripped it stays tripped for the turn, whatever follows", () => {
    const states = run("DDDAAAAAAAAAA");
    assert.ok(states.every((s, i) => i < 2 || s.tripped === "consecutive"));
  });
});

describe("P13: the service pauses review for the turn", () => {
  test("after three denials the fourth review is refused without calling the model; a new turn reopens", async () => {
    const { registry, faux } = await fauxRegistry();
    const service = createReviewService({ limiter: createLimiter(4, 16) });
    faux.setResponses([
      fauxAssistantMessage(VERDICT.deny),
      fauxAssistantMessage(VERDICT.deny),
      fauxAssistantMessage(VERDICT.deny),
      fauxAssistantMessage(VERDICT.allow),
    ]);
    const job = { action: action("bash", { command: "rm -rf build/cache" }), transcript: [], reviewer: JUDGE };
    for (let i = 0; i < 3; i++) assert.equal((await service.review(job, piReviewerModels(registry), undefined)).kind, "verdict");
    const paused = await service.review(job, piReviewerModels(registry), undefined);
    assert.equal(paused.kind === "failure" && paused.failure, "paused");
    assert.equal(faux.state.callCount, 3, "no fourth model call");
    assert.match(failureDenialText("paused"), /paused for the rest of this turn/);
    service.newTurn();
    const again = await service.review(job, piReviewerModels(registry), undefined);
    assert.equal(again.kind === "verdict" && again.verdict.outcome, "allow");
  });

  test("failures count as denials, aborts do not", async () => {
    const { registry, faux } = await fauxRegistry();
    const service = createReviewService({ limiter: createLimiter(4, 16), limits: { retryBaseMs: 1 } });
    const job = { action: action("bash", { command: "rm -rf build/cache" }), transcript: [], reviewer: JUDGE };
    const aborted = new AbortController();
    aborted.abort("esc");
    for (let i = 0; i < 3; i++) assert.equal((await service.review(job, piReviewerModels(registry), aborted.signal)).kind, "failure");
    assert.equal(service.breaker().window.length, 0, "aborts are not counted");
    faux.setResponses([
      fauxAssistantMessage("not json"),
      fauxAssistantMessage("still not json"),
      fauxAssistantMessage("nope"),
      fauxAssistantMessage("no"),
      fauxAssistantMessage("x"),
      fauxAssistantMessage("y"),
    ]);
    for (let i = 0; i < 3; i++) {
      const r = await service.review(job, piReviewerModels(registry), undefined);
      assert.equal(r.kind === "failure" && r.failure, "malformed");
    }
    assert.equal(service.breaker().tripped, "consecutive");
  });
});
