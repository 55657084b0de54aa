import { useState } from 'preact/hooks';
import { apiPath, type Endpoint, post } from '../api.ts';
import { Badge, CheckboxField, Empty, ErrorNotice, Loading, Notice, SubmitButton, TextField } from '../components/ui.tsx';
import { useFirstRender, useResource, useSubmission } from '../lib/hooks.ts';

export interface Marketplace {
  id: string;
  name: string;
  url: string;
  username: string;
  is_default: boolean;
  is_active: boolean;
}

interface PublicationResult {
  marketplace_id: string;
  marketplace_name: string;
  success: boolean;
  message: string;
  error: string | null;
}

/**
 * Where the endpoint is listed: the tenant's marketplace accounts (SyftHub), connected here if there is none
 * yet, and publish or unpublish with each one's own result.
 */
export function Publish(props: { endpoint: Endpoint; reload: () => Promise<void> }) {
  useFirstRender();
  const marketplaces = useResource<Marketplace[]>('/marketplaces/');
  if (marketplaces.error) return <ErrorNotice error={marketplaces.error} />;
  if (!marketplaces.data) return <Loading what="your marketplaces" />;
  return (
    <>
      {marketplaces.data.length > 0 && <Publication endpoint={props.endpoint} marketplaces={marketplaces.data} reload={props.reload} />}
      <Connect first={marketplaces.data.length === 0} onConnected={marketplaces.reload} />
    </>
  );
}

function Publication(props: { endpoint: Endpoint; marketplaces: Marketplace[]; reload: () => Promise<void> }) {
  const { endpoint } = props;
  const [chosen, setChosen] = useState<Set<string>>(
    () =>
      new Set(
        props.marketplaces.filter((marketplace) => !endpoint.published_to.includes(marketplace.id)).map((marketplace) => marketplace.id),
      ),
  );
  const [results, setResults] = useState<PublicationResult[] | undefined>(undefined);
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const run = async (action: 'publish' | 'unpublish', ids: string[]) => {
    setBusy(true);
    setFailure(undefined);
    try {
      const answer = await post<{ results: PublicationResult[] }>(apiPath`/endpoints/${endpoint.slug}/${action}`, {
        marketplace_ids: ids,
      });
      setResults(answer.results);
      await props.reload();
    } catch (error) {
      setFailure(error as Error);
    } finally {
      setBusy(false);
    }
  };

  const toggle = (id: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(id);
    else next.delete(id);
    setChosen(next);
  };

  return (
    <section class="card" aria-labelledby="publish-title">
      <h2 id="publish-title">Publish</h2>
      <p class="hint">
        A marketplace lists the endpoint (its name, summary, description and policies) and sends its consumers here with satellite tokens.
        Consumers reach knode at your public URL: a tunnel or a reverse proxy (see the README).
      </p>
      <ul class="policy-list">
        {props.marketplaces.map((marketplace) => {
          const published = endpoint.published_to.includes(marketplace.id);
          return (
            <li key={marketplace.id} class="policy">
              <div class="policy-head">
                {published ? (
                  <div>
                    <strong>{marketplace.name}</strong> <Badge tone="good">published</Badge>
                    <p class="policy-config">
                      {marketplace.url} as {marketplace.username}
                    </p>
                  </div>
                ) : (
                  <CheckboxField
                    label={`${marketplace.name} (${marketplace.url} as ${marketplace.username})`}
                    checked={chosen.has(marketplace.id)}
                    onChange={(checked) => toggle(marketplace.id, checked)}
                  />
                )}
                {published && (
                  <button type="button" class="secondary small" disabled={busy} onClick={() => run('unpublish', [marketplace.id])}>
                    Unpublish<span class="visually-hidden"> from {marketplace.name}</span>
                  </button>
                )}
              </div>
            </li>
          );
        })}
      </ul>
      <div class="form-actions">
        <button
          type="button"
          disabled={busy || [...chosen].every((id) => endpoint.published_to.includes(id)) || chosen.size === 0}
          onClick={() =>
            run(
              'publish',
              [...chosen].filter((id) => !endpoint.published_to.includes(id)),
            )
          }
        >
          {busy ? 'Working…' : 'Publish'}
        </button>
      </div>
      <ErrorNotice error={failure} />
      {results && (
        <ul class="results" aria-live="polite">
          {results.map((result) => (
            <li key={result.marketplace_id}>
              <Notice kind={result.success ? 'success' : 'error'} title={`${result.marketplace_name}:`}>
                {result.message}
                {result.error ? ` (${result.error})` : ''}
              </Notice>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** Where SyftHub runs: a newcomer's marketplace, so the form starts with it (another hub's URL replaces it). */
export const SYFTHUB_URL = 'https://syfthub.openmined.org';

/** Connects a marketplace account: knode logs in once to check it (400 with the hub's reason if refused). */
export function Connect(props: {
  first: boolean;
  onConnected: () => Promise<void> /** Inside another card (Settings): no card of its own. */;
  embedded?: boolean;
}) {
  const [name, setName] = useState('SyftHub');
  const [url, setUrl] = useState(SYFTHUB_URL);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const { busy, errors, failure, run } = useSubmission();
  const [open, setOpen] = useState(props.first);

  const submit = async (event: Event) => {
    event.preventDefault();
    await run(async () => {
      await post('/marketplaces/', { name, url, username, password });
      setPassword('');
      setOpen(false);
      await props.onConnected();
    });
  };

  if (!open) {
    return (
      <p>
        <button type="button" class="secondary" onClick={() => setOpen(true)}>
          Connect another marketplace
        </button>
      </p>
    );
  }
  return (
    <form class={props.embedded ? 'form connect-form' : 'card form'} onSubmit={submit} aria-labelledby="connect-title">
      {props.embedded ? <h3 id="connect-title">Connect a marketplace</h3> : <h2 id="connect-title">Connect a marketplace</h2>}
      {props.first && <Empty>No marketplace yet: connect your SyftHub account to publish your endpoints.</Empty>}
      <p data-connect="about">SyftHub is the marketplace where people find your endpoints, get tokens to query them, and pay for them.</p>
      <TextField label="Name" required maxLength={200} value={name} onInput={setName} error={errors.name} />
      <TextField
        label="Marketplace URL"
        type="url"
        required
        placeholder={SYFTHUB_URL}
        hint="SyftHub's address; replace it only to use another hub."
        value={url}
        onInput={setUrl}
        error={errors.url}
      />
      <TextField
        label="User name"
        required
        autoComplete="off"
        hint="Your hub user name (not your e-mail): consumers' tokens name it."
        value={username}
        onInput={setUsername}
        error={errors.username}
      />
      <TextField
        label="Password"
        type="password"
        required
        autoComplete="off"
        hint="Stored encrypted; knode logs in once now to check it."
        value={password}
        onInput={setPassword}
        error={errors.password}
      />
      <ErrorNotice error={failure} />
      <div class="form-actions">
        <SubmitButton busy={busy} busyLabel="Connecting…">
          Connect
        </SubmitButton>
      </div>
    </form>
  );
}
