import { useId } from 'react';
import { chatUserHint } from '../chatUser';

interface Props {
  user: string;
  verifiedIdentity: boolean;
  disabled?: boolean;
  onChange: (user: string) => void;
}

// ChatUser is the Run panel's "User id" setting: who the chat runs as, and
// who decides it (see chatUser.ts).
export function ChatUser({ user, verifiedIdentity, disabled, onChange }: Props) {
  const id = useId();
  return (
    <div className="chat-user">
      <label htmlFor={id}>User id</label>
      <input
        id={id}
        value={user}
        spellCheck={false}
        disabled={disabled}
        placeholder={verifiedIdentity ? 'set by the server from your sign-in' : 'none'}
        aria-describedby={`${id}-hint`}
        onChange={(e) => onChange(e.target.value)}
      />
      <p className="desc" id={`${id}-hint`} data-testid="chat-user-hint">
        {chatUserHint(verifiedIdentity, user)}
      </p>
    </div>
  );
}
