import { useRef, useState } from 'preact/hooks';
import {
  MAX_TOKENS_MAX,
  QUERY_LIMIT_DEFAULT,
  QUERY_LIMIT_MAX,
  QUERY_THRESHOLD_DEFAULT,
  SPEC_MAX_TOKENS,
  SPEC_TEMPERATURE,
  TEMPERATURE_MAX,
} from '../../../src/http/field-bounds.ts';
import { apiPath, failure, send } from '../../api.ts';
import { References } from '../../components/references.tsx';
import { Notice, SelectField, TextField } from '../../components/ui.tsx';
import { money } from '../../lib/format.ts';
import { useFirstRender } from '../../lib/hooks.ts';
import type { Endpoint, ModelAnswer, PolicyEntry, Reference } from '../../views.ts';

/**
 * Which of the endpoint's policies refused a query: the refusing entry is the last of `policy_metadata` (it names
 * a type), and the endpoint's policies of that type give its name.
 */
function refusedBy(entries: PolicyEntry[] | undefined, policies: Endpoint['policies']): { type: string; names: string[] } | undefined {
  const refusing = entries?.findLast((entry) => entry.status === 'rejected') ?? undefined;
  if (!refusing) return undefined;
  const names = (policies ?? []).filter((policy) => policy.policy_type === refusing.policy_type).map((policy) => policy.name);
  return { type: refusing.policy_type, names };
}

interface Turn {
  question: string;
  answer: string;
  references?: Reference[];
  referencesCost?: number;
  usage?: ModelAnswer['usage'];
  cost?: number;
  totalCost?: number;
  policies?: PolicyEntry[];
  error?: string;
  done: boolean;
  firstTokenMs?: number;
  ms?: number;
  /** The threshold the question was asked with. */
  threshold?: number;
}

/** Server-Sent Events of a fetch response: `{event, data}` per block (API-CONTRACT 6). */
async function* events(response: Response): AsyncGenerator<{ event: string | undefined; data: string }> {
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, '\n');
    for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      let event: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length > 0) yield { event, data: data.join('\n') };
    }
  }
}

/** Conversations per endpoint, kept while the console is open (switching tabs does not lose them). */
const conversations = new Map<string, Turn[]>();

const MODES = [
  { value: '', label: 'Hybrid (default)' },
  { value: 'keyword', label: 'Keyword' },
  { value: 'vector', label: 'Vector' },
];

/**
 * Queries the endpoint as its owner (the same route and policies consumers go through) and streams the
 * answer token by token, with the references first (expandable, with source and score), then the usage
 * and cost. Earlier turns go along as the conversation.
 */
export function Playground(props: { endpoint: Endpoint }) {
  useFirstRender();
  const { endpoint } = props;
  const [question, setQuestion] = useState('');
  const [turns, setStoredTurns] = useState<Turn[]>(() => conversations.get(endpoint.id) ?? []);
  const setTurns = (next: Turn[] | ((current: Turn[]) => Turn[])) =>
    setStoredTurns((current) => {
      const value = typeof next === 'function' ? next(current) : next;
      conversations.set(endpoint.id, value);
      return value;
    });
  const [asking, setAsking] = useState(false);
  const [mode, setMode] = useState('');
  const [limit, setLimit] = useState('');
  const [threshold, setThreshold] = useState('');
  const [maxTokens, setMaxTokens] = useState('');
  const [temperature, setTemperature] = useState('');
  const abort = useRef<AbortController | undefined>(undefined);
  const hasModel = endpoint.response_type !== 'raw';

  const update = (index: number, change: Partial<Turn>) =>
    setTurns((current) => current.map((turn, at) => (at === index ? { ...turn, ...change } : turn)));

  const ask = async (event?: Event) => {
    event?.preventDefault();
    const text = question.trim();
    if (!text || asking) return;
    const history = turns.filter((turn) => !turn.error && turn.answer);
    const messages = hasModel
      ? [
          ...history.flatMap((turn) => [
            { role: 'user', content: turn.question },
            { role: 'assistant', content: turn.answer },
          ]),
          { role: 'user', content: text },
        ]
      : text;
    const body: Record<string, unknown> = { messages, stream: true };
    if (limit) body.limit = Number(limit);
    if (threshold) body.similarity_threshold = Number(threshold);
    if (maxTokens) body.max_tokens = Number(maxTokens);
    if (temperature) body.temperature = Number(temperature);
    if (mode) body.extras = { reference_options: { mode } };

    const index = turns.length;
    setTurns([...turns, { question: text, answer: '', done: false, threshold: threshold ? Number(threshold) : QUERY_THRESHOLD_DEFAULT }]);
    setQuestion('');
    setAsking(true);
    const controller = new AbortController();
    abort.current = controller;
    const started = performance.now();
    let answer = '';
    try {
      // Marked as the playground's, so the usage analytics can leave the owner's own questions out.
      const response = await send('POST', apiPath`/endpoints/${endpoint.slug}/query`, body, {
        signal: controller.signal,
        headers: { 'x-knode-origin': 'playground' },
      });
      if (!response.ok) {
        const error = await failure(response);
        const entries = (error.body as { policy_metadata?: { entries?: PolicyEntry[] } } | undefined)?.policy_metadata?.entries;
        update(index, { error: error.message, done: true, ...(entries ? { policies: entries } : {}) });
        return;
      }
      for await (const { event: name, data } of events(response)) {
        if (data === '[DONE]') break;
        const parsed = JSON.parse(data);
        if (name === 'references') {
          update(index, { references: parsed.references.documents, referencesCost: parsed.references.cost });
        } else if (name === 'error') {
          update(index, { error: parsed.detail ?? 'The answer failed' });
        } else {
          const delta = parsed.choices?.[0]?.delta?.content;
          if (typeof delta === 'string' && delta !== '') {
            if (answer === '') update(index, { firstTokenMs: performance.now() - started });
            answer += delta;
            update(index, { answer });
          }
          if (parsed.usage) {
            update(index, {
              usage: parsed.usage,
              cost: parsed.cost,
              totalCost: parsed.total_cost,
              policies: parsed.policy_metadata?.entries ?? [],
            });
          }
        }
      }
      update(index, { done: true, ms: performance.now() - started });
    } catch (error) {
      const stopped = (error as Error).name === 'AbortError';
      update(index, { done: true, ms: performance.now() - started, ...(stopped ? {} : { error: (error as Error).message }) });
    } finally {
      setAsking(false);
      abort.current = undefined;
    }
  };

  return (
    <section class="playground" aria-label="Playground">
      {turns.length === 0 && (
        <p class="hint">
          Ask a question as {hasModel ? 'a consumer would' : 'a search'}: the query goes through this endpoint's policies, under your own
          e-mail, and is recorded in its usage.
        </p>
      )}
      <ol class="conversation">
        {turns.map((turn, index) => (
          <li key={index} class="turn">
            <div class="bubble question">
              <span class="visually-hidden">You asked: </span>
              {turn.question}
            </div>
            <div class="bubble answer-bubble" aria-live="polite" aria-busy={!turn.done}>
              {turn.error && <Notice kind="error">{turn.error}</Notice>}
              {turn.error && <Refusal entries={turn.policies} endpoint={endpoint} />}
              {hasModel && (turn.answer || !turn.error) && (
                <p class="answer-text">
                  {turn.answer}
                  {!turn.done && <span class="cursor" aria-hidden="true" />}
                </p>
              )}
              {!hasModel && !turn.done && !turn.references && <p>Searching…</p>}
              {turn.references && (
                <details class="sources" open={!hasModel || undefined}>
                  <summary>
                    {turn.references.length === 0
                      ? 'No passage found'
                      : `${turn.references.length} source${turn.references.length === 1 ? '' : 's'}`}
                  </summary>
                  <References documents={turn.references} />
                  {turn.references.length === 0 && (
                    <p class="hint" data-threshold-note>
                      Passages scoring below {turn.threshold ?? QUERY_THRESHOLD_DEFAULT} are left out: lower the threshold in the query
                      options to see weaker matches (the dataset's own search shows every result).
                    </p>
                  )}
                </details>
              )}
              {turn.done && !turn.error && (
                <p class="meta">
                  {hasModel && turn.usage && `${turn.usage.prompt_tokens} prompt + ${turn.usage.completion_tokens} completion tokens · `}
                  cost {money(turn.totalCost ?? turn.referencesCost ?? 0)}
                  {hasModel &&
                    turn.cost !== undefined &&
                    turn.referencesCost !== undefined &&
                    ` (search ${money(turn.referencesCost)}, model ${money(turn.cost)})`}
                  {turn.firstTokenMs !== undefined && ` · first token ${Math.round(turn.firstTokenMs)} ms`}
                  {turn.ms !== undefined && ` · ${Math.round(turn.ms)} ms`}
                </p>
              )}
              {turn.policies && turn.policies.length > 0 && (
                <ul class="policy-entries" aria-label="Policies">
                  {turn.policies.map((entry, at) => (
                    <li key={at}>
                      {entry.policy_type}: {entry.status}
                      {entry.amount !== null && entry.amount !== undefined ? ` ${money(entry.amount)}` : ''}
                      {entry.reason ? ` (${entry.reason})` : ''}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          </li>
        ))}
      </ol>
      <form class="ask card" onSubmit={ask}>
        <TextField
          label="Your question"
          multiline
          rows={2}
          required
          value={question}
          onInput={setQuestion}
          hint="Enter sends; Shift+Enter starts a new line."
          onKeyDown={(event: KeyboardEvent) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
              event.preventDefault();
              void ask();
            }
          }}
        />
        {endpoint.dataset && (
          <p class="hint threshold-note" data-threshold-note>
            Only passages scoring {threshold || QUERY_THRESHOLD_DEFAULT} or more are used (the threshold, in the query options; 0 keeps them
            all). The dataset's search page shows every result.
          </p>
        )}
        <details class="more">
          <summary>Query options</summary>
          <div class="more-body options-grid">
            {endpoint.dataset && (
              <>
                <SelectField label="Search mode" value={mode} onChange={setMode} options={MODES} />
                <TextField
                  label="Passages"
                  type="number"
                  min={1}
                  max={QUERY_LIMIT_MAX}
                  placeholder={String(QUERY_LIMIT_DEFAULT)}
                  value={limit}
                  onInput={setLimit}
                />
                <TextField
                  label="Threshold"
                  type="number"
                  min={0}
                  max={1}
                  step={0.05}
                  placeholder={String(QUERY_THRESHOLD_DEFAULT)}
                  hint="Passages scoring below it are left out."
                  value={threshold}
                  onInput={setThreshold}
                />
              </>
            )}
            {hasModel && (
              <>
                <TextField
                  label="Answer length (max tokens)"
                  type="number"
                  min={1}
                  max={MAX_TOKENS_MAX}
                  placeholder={String(endpoint.generation_defaults.max_tokens ?? SPEC_MAX_TOKENS)}
                  value={maxTokens}
                  onInput={setMaxTokens}
                />
                <TextField
                  label="Temperature"
                  type="number"
                  min={0}
                  max={TEMPERATURE_MAX}
                  step={0.1}
                  placeholder={String(endpoint.generation_defaults.temperature ?? SPEC_TEMPERATURE)}
                  value={temperature}
                  onInput={setTemperature}
                />
              </>
            )}
          </div>
        </details>
        <div class="form-actions">
          <button type="submit" disabled={asking || question.trim() === ''}>
            {asking ? 'Answering…' : 'Ask'}
          </button>
          {asking && (
            <button type="button" class="secondary" onClick={() => abort.current?.abort()}>
              Stop
            </button>
          )}
          {turns.length > 0 && !asking && (
            <button type="button" class="secondary" onClick={() => setTurns([])}>
              New conversation
            </button>
          )}
        </div>
      </form>
    </section>
  );
}

/** Names the policy that refused a question, with the way to its settings. */
function Refusal(props: { entries: PolicyEntry[] | undefined; endpoint: Endpoint }) {
  const refused = refusedBy(props.entries, props.endpoint.policies);
  if (!refused) return null;
  const what = refused.type === 'mpp' ? 'price (MPP)' : refused.type.replace(/_/g, ' ');
  const named = refused.names.length > 0 ? ` ${refused.names.map((name) => `'${name}'`).join(' or ')}` : '';
  return (
    <p class="refused-by" data-refused-by>
      Refused by the {what} policy{named}.{' '}
      <a href={`/endpoints/${encodeURIComponent(props.endpoint.slug)}/policies`}>Change it in Policies</a>
      {refused.type === 'access' ? ' (your own e-mail must pass it too).' : '.'}
    </p>
  );
}
