import { useEffect, useRef, useState } from 'preact/hooks';
import { post } from '../api.ts';
import { useDebounced } from '../lib/hooks.ts';
import type { DiscoveredModels } from '../views.ts';
import type { WidgetProps } from './schema-form.tsx';
import { Field } from './ui.tsx';

export const OLLAMA_URL = 'http://127.0.0.1:11434/v1';

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * What the chooser says of the discovery: a hint while asking or when there is nothing to list, and an unreachable
 * server as a problem to fix (its address, or starting it), said beside the control, not as a hint.
 */
function discoveryMessages(
  loading: boolean,
  found: DiscoveredModels | undefined,
  typed: boolean,
  list: DiscoveredModels['models'] | undefined,
): { status?: string; unreachable?: string } {
  if (loading) return { status: 'Asking the server for its models…' };
  if (found && !found.reachable) {
    if (!typed)
      return { status: `Give your server's base URL (Ollama: ${OLLAMA_URL}), or an API key for OpenAI: its models are listed here.` };
    const reason = found.error ? ` (${found.error})` : '';
    return {
      unreachable: `knode cannot get the list of models from ${found.base_url}${reason}. Check that the server is running, its base URL (Ollama: ${OLLAMA_URL}) and its API key, then load the list again.`,
    };
  }
  if (found?.reachable && found.models.length === 0) return { status: 'The server lists no model: type its name.' };
  if (list) return { status: `${list.length} models on ${found?.base_url}.` };
  return {};
}

/** Asks the server at `baseUrl` for its models (`POST /api/v1/models/discover`); never throws for a dead server. */
export function discover(baseUrl: string, apiKey?: string): Promise<DiscoveredModels> {
  return post<DiscoveredModels>('/models/discover', { base_url: baseUrl, ...(apiKey ? { api_key: apiKey } : {}) });
}

/**
 * The `model` of an OpenAI-compatible server, picked from the list the server gives (asked again when
 * `base_url` or `api_key` change), or typed when the server gives none.
 */
export function ModelChooser(props: WidgetProps) {
  const baseUrl = (typeof props.values.base_url === 'string' && props.values.base_url.trim()) || String(props.schema.default ?? '');
  const key = typeof props.values.api_key === 'string' && props.values.api_key !== '********' ? props.values.api_key : '';
  const settled = useDebounced(`${baseUrl}\n${key}`, 500);
  const [found, setFound] = useState<DiscoveredModels | undefined>(undefined);
  const [loading, setLoading] = useState(false);
  const [typing, setTyping] = useState(false);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const [url = '', apiKey = ''] = settled.split('\n');
    if (!isHttpUrl(url)) {
      setFound(undefined);
      return;
    }
    let current = true;
    setLoading(true);
    discover(url, apiKey)
      .then((answer) => {
        if (!current) return;
        setFound(answer);
        const first = answer.models[0];
        if (answer.reachable && first && !answer.models.some((model) => model.id === props.value)) props.onChange(first.id);
      })
      .catch(() => current && setFound(undefined))
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
  }, [settled, attempt]);

  const list = found?.reachable && found.models.length > 0 && !typing ? found.models : undefined;
  // Before anything is typed the default server (OpenAI's) is asked without a key: its refusal is no mistake yet.
  const typed = (typeof props.values.base_url === 'string' && props.values.base_url.trim() !== '') || key !== '';
  const { status, unreachable } = discoveryMessages(loading, found, typed, list);
  // The list or the text box replaces the button pressed ("Load the list", "Type a name"): the focus follows.
  const row = useRef<HTMLDivElement>(null);
  const focusControl = () => row.current?.querySelector<HTMLElement>('select, input')?.focus();
  const follow = useRef<'list' | 'typing' | undefined>(undefined);
  const askedWith = useRef<DiscoveredModels | undefined>(undefined);
  useEffect(() => {
    if (follow.current === 'typing' && typing) {
      follow.current = undefined;
      focusControl();
    } else if (follow.current === 'list' && !loading && found !== askedWith.current) {
      // The answer to the press has come: the list when there is one (else the button stays, and the message says why).
      follow.current = undefined;
      if (list) focusControl();
    }
  }, [typing, loading, found]);

  return (
    <Field label={props.label} hint={status ?? props.hint} error={props.error ?? unreachable} required={props.required}>
      {({ id, describedBy, invalid }) => (
        <div class="picker-row" ref={row}>
          {list ? (
            <select
              id={id}
              name={props.name}
              value={props.value}
              required={props.required}
              aria-describedby={describedBy}
              aria-invalid={invalid || undefined}
              onChange={(event) => props.onChange(event.currentTarget.value)}
            >
              {list.map((model) => (
                <option key={model.id} value={model.id}>
                  {model.id}
                </option>
              ))}
            </select>
          ) : (
            <input
              id={id}
              name={props.name}
              type="text"
              spellcheck={false}
              required={props.required}
              aria-describedby={describedBy}
              aria-invalid={invalid || undefined}
              placeholder="llama3.2"
              value={props.value}
              onInput={(event) => props.onChange(event.currentTarget.value)}
            />
          )}
          {list ? (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                follow.current = 'typing';
                setTyping(true);
              }}
            >
              Type a name
            </button>
          ) : (
            <button
              type="button"
              class="secondary"
              disabled={loading || !isHttpUrl(baseUrl)}
              onClick={() => {
                follow.current = 'list';
                askedWith.current = found;
                setTyping(false);
                setAttempt(attempt + 1);
              }}
            >
              Load the list
            </button>
          )}
        </div>
      )}
    </Field>
  );
}
