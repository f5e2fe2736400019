import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { chatUserHint, defaultChatUser, EXAMPLE_USER, forwardedProps } from './chatUser';
import { ChatUser } from './ui/ChatUser';

const noop = () => {};

describe('the user a chat runs as', () => {
  it('is the example orders’ owner on a server that takes the caller’s word, sent in forwardedProps', () => {
    expect(defaultChatUser(false)).toBe(EXAMPLE_USER);
    expect(forwardedProps('alice')).toEqual({ ruleagent: { subagentEvents: true, userId: 'alice' } });
    const html = renderToStaticMarkup(<ChatUser user="alice" verifiedIdentity={false} onChange={noop} />);
    expect(html).toContain('>User id</label>');
    expect(html).toContain('value="alice"');
    expect(html).toContain('Runs as “alice” (metadata.userId, sent as forwardedProps.ruleagent.userId)');
    expect(html).toContain('takes this as the caller’s word');
    expect(html).toContain('alice owns the example orders');
  });

  it('is none when emptied: the hint says that bound tools refuse', () => {
    expect(forwardedProps('  ')).toEqual({ ruleagent: { subagentEvents: true } });
    expect(chatUserHint(false, '')).toMatch(/^Runs without a user: tools that bind metadata\.userId refuse their calls/);
  });

  it('is left to the server that verifies who calls (--auth): nothing is sent, and the field says so', () => {
    expect(defaultChatUser(true)).toBe('');
    expect(forwardedProps(defaultChatUser(true)).ruleagent).not.toHaveProperty('userId');
    const html = renderToStaticMarkup(<ChatUser user="" verifiedIdentity onChange={noop} />);
    expect(html).toContain('placeholder="set by the server from your sign-in"');
    expect(html).toContain('This server verifies who calls (--auth): it sets the run’s user from your sign-in.');
  });
});
