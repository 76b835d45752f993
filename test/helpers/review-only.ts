// For test files that judge the gate under the review-only backend (a platform without an OS
// sandbox): installs a review-only sandbox controller for the file, and disposes every session
// started through the returned function when the file is done.

import { after, before } from "node:test";
import { createController, resetSharedController, sharedController } from "../../src/sandbox/controller.ts";
import { startPi, type HarnessOptions, type PiHarness } from "./pi-session.ts";

export function reviewOnlySessions(): (opts?: HarnessOptions) => Promise<PiHarness> {
  const started: PiHarness[] = [];
  before(() => {
    resetSharedController();
    sharedController(() => createController({ platform: "review-only-test-platform" }));
  });
  after(async () => {
    for (const h of started.splice(0)) await h.dispose();
    resetSharedController();
  });
  return async (opts = {}) => {
    const h = await startPi(opts);
    started.push(h);
    return h;
  };
}
