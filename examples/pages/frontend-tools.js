// The front-end tool example: the page-helper chain changes this page
// through tools the page offers and runs itself.
import { AgentClient } from './agui-client.js';

const $ = (sel) => document.querySelector(sel);

// The tools, as AG-UI offers them to the model: a name, a description and
// a JSON Schema of the arguments.
const tools = [
  {
    name: 'set_theme',
    description: "Switch this page's colour theme between light and dark.",
    parameters: { type: 'object', properties: { theme: { type: 'string', enum: ['light', 'dark'] } }, required: ['theme'] },
  },
  {
    name: 'show_card',
    description: 'Show a card on this page with a title and an optional short text.',
    parameters: {
      type: 'object',
      properties: { title: { type: 'string', description: 'The title of the card.' }, text: { type: 'string' } },
      required: ['title'],
    },
  },
];

// What each tool does here; the value returned is the result the model
// reads.
const handlers = {
  set_theme: ({ theme }) => {
    if (theme !== 'light' && theme !== 'dark') throw new Error(`unknown theme ${theme}`);
    document.body.dataset.theme = theme;
    return { theme };
  },
  show_card: ({ title, text = '' }) => {
    const card = document.createElement('article');
    card.className = 'card';
    card.append(Object.assign(document.createElement('h2'), { textContent: title }));
    if (text) card.append(Object.assign(document.createElement('p'), { textContent: text }));
    $('#cards').append(card);
    return { shown: title };
  },
};

const log = $('#log');
function line(kind, text) {
  const p = document.createElement('p');
  p.className = kind;
  p.textContent = text;
  log.append(p);
  p.scrollIntoView({ block: 'nearest' });
  return p;
}

// The transcript: the answer streams into its line; each tool call gets a
// line saying where it ran.
const streaming = new Map();
const args = new Map();
function show(event) {
  if (event.subagentRunId) return;
  switch (event.type) {
    case 'TEXT_MESSAGE_START':
      streaming.set(event.messageId, line('assistant', ''));
      break;
    case 'TEXT_MESSAGE_CONTENT':
      streaming.get(event.messageId).textContent += event.delta;
      break;
    case 'TOOL_CALL_START':
      args.set(event.toolCallId, { name: event.toolCallName, args: '', client: event.metadata?.toolType === 'client' });
      break;
    case 'TOOL_CALL_ARGS':
      args.get(event.toolCallId).args += event.delta;
      break;
    case 'TOOL_CALL_END': {
      const c = args.get(event.toolCallId);
      line('tool-call', `→ ${c.name} ${c.args}${c.client ? ' (runs in this page)' : ''}`).dataset.toolCall = c.name;
      break;
    }
    case 'TOOL_CALL_RESULT':
      line('tool-result', `✓ ${args.get(event.toolCallId)?.name ?? event.toolCallId}: ${event.content}`);
      break;
    case 'FRONTEND_TOOL_RESULT':
      line('tool-result', `✓ ${event.toolCallName} ran in this page: ${event.content}`).dataset.toolResult = event.toolCallName;
      break;
    case 'RUN_ERROR':
      line('error', `Run failed: ${event.message}`);
      break;
  }
}

const agent = new AgentClient({ url: '/api/v1/chains/page-helper/agui', tools, handlers, onEvent: show });

async function send(text) {
  const button = $('#ask button');
  button.disabled = true;
  line('user', text);
  try {
    await agent.send(text);
  } catch (e) {
    line('error', String(e.message ?? e));
  } finally {
    button.disabled = false;
    $('#log').dataset.idle = 'true';
  }
}

$('#ask').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = $('#message');
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  $('#log').dataset.idle = 'false';
  void send(text);
});
for (const b of document.querySelectorAll('.suggestion')) {
  b.addEventListener('click', () => {
    $('#message').value = b.textContent;
    $('#ask').requestSubmit();
  });
}

// The server says whether its agents answer from the built-in demo model.
fetch('/healthz')
  .then((r) => r.json())
  .then((h) => ($('#demo-badge').hidden = !h.demoModel))
  .catch(() => {});
