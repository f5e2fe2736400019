import { useEffect, useState } from 'react';

const explanation =
  'No LLM is configured: the agents answer from ruleagent\u2019s built-in demo model, with scripted replies marked [demo model]. ' +
  'Set OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL and restart the server for a real model (README, \u201cLLM settings\u201d).';

// DemoBadge says that the server's agents answer from the demo model.
export function DemoBadge({ on }: { on: boolean }) {
  if (!on) return null;
  return (
    <span className="badge" role="note" data-testid="demo-model" title={explanation} aria-label={explanation} style={{ background: 'var(--warn)', color: '#000' }}>
      demo model
    </span>
  );
}

// DemoNotice asks the server (GET /healthz, open without a token) whether
// its agents answer from the built-in demo model, and shows the badge if so.
export function DemoNotice() {
  const [on, setOn] = useState(false);
  useEffect(() => {
    let live = true;
    fetch('/healthz')
      .then((r) => (r.ok ? r.json() : null))
      .then(
        (h: { demoModel?: boolean } | null) => live && setOn(!!h?.demoModel),
        () => {},
      );
    return () => {
      live = false;
    };
  }, []);
  return <DemoBadge on={on} />;
}
