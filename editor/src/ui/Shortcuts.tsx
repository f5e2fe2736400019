import { useEffect, useRef } from 'react';

export const SHORTCUTS: [string, string][] = [
  ['Ctrl+S', 'Save and deploy'],
  ['Ctrl+Z / Ctrl+Shift+Z (Ctrl+Y)', 'Undo / redo'],
  ['Ctrl+C / Ctrl+V', 'Copy / paste the selected nodes'],
  ['Ctrl+A', 'Select everything'],
  ['Delete / Backspace', 'Delete the selection'],
  ['Shift+drag', 'Select an area'],
  ['Ctrl+click', 'Add to the selection'],
  ['F', 'Zoom to fit'],
  ['L', 'Auto-layout'],
  ['Enter (on a palette item)', 'Add the node (an agent tool: to the selected agent)'],
  ['Alt+N', 'New chain'],
  ['Alt+I / Alt+R', 'Inspect / Run tab'],
  ['Enter (in the message box)', 'Send; Shift+Enter for a new line'],
  ['Ctrl+Enter (in the message data or metadata)', 'Run the message'],
  ['Escape', 'Clear the selection, close a dialog'],
  ['?', 'This list'],
];

export function Shortcuts({ list, onClose }: { list: [string, string][]; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => ref.current?.showModal(), []);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby="shortcuts-title" onClose={onClose}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <table className="shortcuts">
        <tbody>
          {list.map(([k, v]) => (
            <tr key={k}>
              <th scope="row">
                <kbd>{k}</kbd>
              </th>
              <td>{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <form method="dialog" className="dialog-buttons">
        <button className="primary" autoFocus>
          Close
        </button>
      </form>
    </dialog>
  );
}
