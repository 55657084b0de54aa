import { useState } from 'preact/hooks';
import { apiPath, post } from '../../api.ts';
import { ConnectMarketplace } from '../../components/connect-marketplace.tsx';
import { Badge, CheckboxField, ErrorNotice, Loading, Notice } from '../../components/ui.tsx';
import { useFirstRender, useResource } from '../../lib/hooks.ts';
import type { Endpoint, Marketplace, PublicationAnswer, PublicationResult } from '../../views.ts';

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
      <ConnectMarketplace first={marketplaces.data.length === 0} onConnected={marketplaces.reload} />
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
      const answer = await post<PublicationAnswer>(apiPath`/endpoints/${endpoint.slug}/${action}`, {
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
