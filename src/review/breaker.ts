// The per-turn circuit breaker (P13): after 3 consecutive denials, or 10 denials among the last
// 50 reviews, automatic review stops for the rest of the turn. A model that keeps proposing
// actions the reviewer refuses is not helped by more reviews, and each one costs time and money.
// Pure: the state is a value, and the caller keeps one per turn.

export const CONSECUTIVE_LIMIT = 3;
export const WINDOW_SIZE = 50;
export const WINDOW_LIMIT = 10;

export type Trip = "consecutive" | "window";

export interface BreakerState {
  readonly consecutive: number;
  /** The last WINDOW_SIZE review outcomes, oldest first: true = denied. */
  readonly window: readonly boolean[];
  readonly tripped: Trip | undefined;
}

export const CLOSED: BreakerState = { consecutive: 0, window: [], tripped: undefined };

/** Record one finished review. Once tripped, the state stays tripped until the turn ends. */
export function recordReview(s: BreakerState, denied: boolean): BreakerState {
  const window = [...s.window, denied].slice(-WINDOW_SIZE);
  const consecutive = denied ? s.consecutive + 1 : 0;
  const denials = window.filter(Boolean).length;
  const tripped = s.tripped ?? (consecutive >= CONSECUTIVE_LIMIT ? "consecutive" : denials >= WINDOW_LIMIT ? "window" : undefined);
  return { consecutive, window, tripped };
}

export function breakerMessage(t: Trip): string {
  return t === "consecutive" ? `${CONSECUTIVE_LIMIT} reviews in a row ended in denial` : `${WINDOW_LIMIT} of the last ${WINDOW_SIZE} reviews ended in denial`;
}
