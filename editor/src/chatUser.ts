// The user a chat in the Run panel runs as. AG-UI has no user field: the
// editor names its user in forwardedProps.ruleagent.userId (README: AG-UI),
// which becomes the run's metadata.userId, the value agents bind
// (support-agent's get_order_status binds it). Without verified identity
// the server takes the caller's word for it; with it (serve --auth) the
// server sets the user from the sign-in and refuses another's id, so the
// editor names none unless asked to.

// EXAMPLE_USER owns the example orders of chains/order-status.json.
export const EXAMPLE_USER = 'alice';

export function defaultChatUser(verifiedIdentity: boolean): string {
  return verifiedIdentity ? '' : EXAMPLE_USER;
}

export interface ForwardedProps {
  ruleagent: { subagentEvents: true; userId?: string };
}

// forwardedProps is the RunAgentInput's forwardedProps for a chat as user.
export function forwardedProps(user: string): ForwardedProps {
  const id = user.trim();
  return { ruleagent: id ? { subagentEvents: true, userId: id } : { subagentEvents: true } };
}

// chatUserHint says who decides the user, and what the field sends.
export function chatUserHint(verifiedIdentity: boolean, user: string): string {
  if (verifiedIdentity)
    return 'This server verifies who calls (--auth): it sets the run’s user from your sign-in. Leave this empty; an id that is not yours is refused (unless you signed in with the operator’s token).';
  const who = user.trim() ? `Runs as “${user.trim()}”` : 'Runs without a user: tools that bind metadata.userId refuse their calls';
  return `${who} (metadata.userId, sent as forwardedProps.ruleagent.userId). This server verifies no one: it takes this as the caller’s word.${user.trim() === EXAMPLE_USER ? ' alice owns the example orders (A-1001, A-1002).' : ''}`;
}
