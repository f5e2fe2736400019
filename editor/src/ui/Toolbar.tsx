interface Props {
  canUndo: boolean;
  canRedo: boolean;
  open: boolean;
  // The server refuses deploys (ruleagent serve --read-only).
  readOnly?: boolean;
  onUndo: () => void;
  onRedo: () => void;
  onLayout: () => void;
  onFit: () => void;
  onExport: () => void;
  onDeploy: () => void;
  onHelp: () => void;
}

// The chain's actions, each with its shortcut in its title.
export function Toolbar(p: Props) {
  return (
    <nav className="toolbar" aria-label="Chain actions">
      <button type="button" disabled={!p.canUndo} onClick={p.onUndo} title="Undo (Ctrl+Z)">
        Undo
      </button>
      <button type="button" disabled={!p.canRedo} onClick={p.onRedo} title="Redo (Ctrl+Shift+Z)">
        Redo
      </button>
      <button type="button" disabled={!p.open} onClick={p.onLayout} title="Auto-layout (L)">
        Layout
      </button>
      <button type="button" disabled={!p.open} onClick={p.onFit} title="Zoom to fit (F)">
        Fit
      </button>
      <button type="button" disabled={!p.open} onClick={p.onExport} title="Download the chain JSON">
        Export
      </button>
      {p.readOnly && (
        <span className="badge" title="The server was started with --read-only: chains change only through its chains folder">
          read-only
        </span>
      )}
      <button
        type="button"
        className="primary"
        disabled={!p.open || p.readOnly}
        onClick={p.onDeploy}
        title={p.readOnly ? 'Deploy is off: the server is read-only (--read-only)' : 'Save and deploy (Ctrl+S)'}
      >
        Deploy
      </button>
      <button type="button" onClick={p.onHelp} title="Keyboard shortcuts (?)" aria-label="Keyboard shortcuts">
        ?
      </button>
    </nav>
  );
}
