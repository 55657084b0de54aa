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
import { events } from '../../lib/server-sent-events.ts';
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

/** The query's body: the conversation so far (a search endpoint takes the question alone) and the options set. */
function queryBody(turns: Turn[], text: string, hasModel: boolean, options: QueryOptions): Record<string, unknown> {
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
  if (options.limit) body.limit = Number(options.limit);
  if (options.threshold) body.similarity_threshold = Number(options.threshold);
  if (options.maxTokens) body.max_tokens = Number(options.maxTokens);
  if (options.temperature) body.temperature = Number(options.temperature);
  if (options.mode) body.extras = { reference_options: { mode: options.mode } };
  return body;
}

/** The query options as typed (empty: the endpoint's own). */
interface QueryOptions {
  mode: string;
  limit: string;
  threshold: string;
  maxTokens: string;
  temperature: string;
}

/**
 * What one streamed event changes in its turn: the references, an error, or a piece of the answer (`answer` is
 * the text so far; its first piece times the first token) and, last, the usage, cost and policies.
 */
function streamedChange(name: string | undefined, parsed: StreamedEvent, answer: string, elapsedMs: number): Partial<Turn> {
  if (name === 'references') {
    const references = parsed.references as NonNullable<StreamedEvent['references']>;
    return { references: references.documents, referencesCost: references.cost };
  }
  if (name === 'error') return { error: parsed.detail ?? 'The answer failed' };
  const change: Partial<Turn> = {};
  const delta = parsed.choices?.[0]?.delta?.content;
  if (typeof delta === 'string' && delta !== '') {
    if (answer === '') change.firstTokenMs = elapsedMs;
    change.answer = answer + delta;
  }
  if (parsed.usage) {
    Object.assign(change, {
      usage: parsed.usage,
      cost: parsed.cost,
      totalCost: parsed.total_cost,
      policies: parsed.policy_metadata?.entries ?? [],
    });
  }
  return change;
}

/** The fields of a streamed event's JSON the playground reads (API-CONTRACT 6). */
interface StreamedEvent {
  references?: { documents: Reference[]; cost: number };
  detail?: string;
  choices?: { delta?: { content?: unknown } }[];
  usage?: ModelAnswer['usage'];
  cost?: number;
  total_cost?: number;
  policy_metadata?: { entries?: PolicyEntry[] };
}

/** Reads a streamed answer into its turn, piece by piece, until the stream ends. */
async function streamInto(response: Response, started: number, update: (change: Partial<Turn>) => void): Promise<void> {
  let answer = '';
  for await (const { event: name, data } of events(response)) {
    if (data === '[DONE]') break;
    const change = streamedChange(name, JSON.parse(data), answer, performance.now() - started);
    answer = change.answer ?? answer;
    if (Object.keys(change).length > 0) update(change);
  }
}

/** A refused or failed query's turn: the message, and the policies' entries when a policy refused it. */
async function refusalOf(response: Response): Promise<Partial<Turn>> {
  const error = await failure(response);
  const entries = (error.body as { policy_metadata?: { entries?: PolicyEntry[] } } | undefined)?.policy_metadata?.entries;
  return { error: error.message, done: true, ...(entries ? { policies: entries } : {}) };
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
    const body = queryBody(turns, text, hasModel, { mode, limit, threshold, maxTokens, temperature });
    const index = turns.length;
    setTurns([...turns, { question: text, answer: '', done: false, threshold: threshold ? Number(threshold) : QUERY_THRESHOLD_DEFAULT }]);
    setQuestion('');
    setAsking(true);
    const controller = new AbortController();
    abort.current = controller;
    const started = performance.now();
    try {
      // Marked as the playground's, so the usage analytics can leave the owner's own questions out.
      const response = await send('POST', apiPath`/endpoints/${endpoint.slug}/query`, body, {
        signal: controller.signal,
        headers: { 'x-knode-origin': 'playground' },
      });
      if (!response.ok) {
        update(index, await refusalOf(response));
        return;
      }
      await streamInto(response, started, (change) => update(index, change));
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
          <TurnView key={index} turn={turn} endpoint={endpoint} hasModel={hasModel} />
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

/** One question and its answer: the refusal or error, the streamed text, the sources, the cost and timings, the policies. */
function TurnView(props: { turn: Turn; endpoint: Endpoint; hasModel: boolean }) {
  const { turn, hasModel } = props;
  return (
    <li class="turn">
      <div class="bubble question">
        <span class="visually-hidden">You asked: </span>
        {turn.question}
      </div>
      <div class="bubble answer-bubble" aria-live="polite" aria-busy={!turn.done}>
        {turn.error && <Notice kind="error">{turn.error}</Notice>}
        {turn.error && <Refusal entries={turn.policies} endpoint={props.endpoint} />}
        {hasModel && (turn.answer || !turn.error) && (
          <p class="answer-text">
            {turn.answer}
            {!turn.done && <span class="cursor" aria-hidden="true" />}
          </p>
        )}
        {!hasModel && !turn.done && !turn.references && <p>Searching…</p>}
        {turn.references && <Sources references={turn.references} threshold={turn.threshold} open={!hasModel} />}
        {turn.done && !turn.error && <TurnMeta turn={turn} hasModel={hasModel} />}
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
  );
}

/** The passages an answer used, open for a search; none found says why (the threshold) and how to see weaker ones. */
function Sources(props: { references: Reference[]; threshold: number | undefined; open: boolean }) {
  const count = props.references.length;
  return (
    <details class="sources" open={props.open || undefined}>
      <summary>{count === 0 ? 'No passage found' : `${count} source${count === 1 ? '' : 's'}`}</summary>
      <References documents={props.references} />
      {count === 0 && (
        <p class="hint" data-threshold-note>
          Passages scoring below {props.threshold ?? QUERY_THRESHOLD_DEFAULT} are left out: lower the threshold in the query options to see
          weaker matches (the dataset's own search shows every result).
        </p>
      )}
    </details>
  );
}

/** A finished answer's tokens, cost (search and model apart when both are known) and timings. */
function TurnMeta(props: { turn: Turn; hasModel: boolean }) {
  const { turn, hasModel } = props;
  return (
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
