// The words every denial the model reads starts and ends with: it was automatic policy, not the
// user, and the model must not rephrase its way around it. One place, so every path says it alike.

export const DENIAL_HEAD = "Denied by auto mode's automatic policy (not by the user).";
export const DO_NOT_ROUTE_AROUND =
  "Do not retry this action in another form or route around it; take a different approach, or ask the user to run it themselves.";

export function denial(body: string): string {
  return `${DENIAL_HEAD} ${body.trim()} ${DO_NOT_ROUTE_AROUND}`;
}

/** The body of a denial text, for quoting it inside another one. */
export function denialBody(text: string): string {
  let t = text.trim();
  if (t.startsWith(DENIAL_HEAD)) t = t.slice(DENIAL_HEAD.length);
  if (t.trimEnd().endsWith(DO_NOT_ROUTE_AROUND)) t = t.trimEnd().slice(0, -DO_NOT_ROUTE_AROUND.length);
  return t.trim();
}
