import { useState } from 'preact/hooks';
import { apiPath, del, patch, post } from '../../api.ts';
import { ConnectMarketplace } from '../../components/connect-marketplace.tsx';
import { Badge, ErrorNotice, Loading, Notice } from '../../components/ui.tsx';
import { date } from '../../lib/format.ts';
import { useFirstRender, useResource, useSubmission } from '../../lib/hooks.ts';
import type { Marketplace, MarketplaceStatus, Synced } from '../../views.ts';

/** Settings, first section: the tenant's marketplace accounts, each with its session, heartbeat and publications. */
export function Marketplaces() {
  useFirstRender();
  const list = useResource<Marketplace[]>('/marketplaces/');
  return (
    <section class="card" aria-labelledby="marketplaces-title">
      <h2 id="marketplaces-title">Marketplaces</h2>
      <ErrorNotice error={list.error} />
      {!list.data && !list.error && <Loading what="your marketplaces" />}
      {list.data && list.data.length > 0 && (
        <ul class="policy-list" data-settings="marketplaces">
          {list.data.map((marketplace) => (
            <MarketplaceItem key={marketplace.id} marketplace={marketplace} reload={list.reload} />
          ))}
        </ul>
      )}
      {list.data && <ConnectMarketplace first={list.data.length === 0} onConnected={list.reload} embedded />}
    </section>
  );
}

function MarketplaceItem(props: { marketplace: Marketplace; reload: () => Promise<void> }) {
  const { marketplace } = props;
  const status = useResource<MarketplaceStatus>(apiPath`/marketplaces/${marketplace.id}/status`);
  const { failure, run } = useSubmission();
  const [synced, setSynced] = useState<string | undefined>(undefined);
  const act = (work: () => Promise<unknown>) => {
    setSynced(undefined);
    return run(async () => {
      await work();
      await props.reload();
    });
  };
  // The hub's list of the account's endpoints is replaced by what knode has published there.
  const sync = () =>
    act(async () => {
      const answer = await post<Synced>('/endpoints/sync', { marketplace_ids: [marketplace.id] });
      const slugs = answer[marketplace.id] ?? [];
      setSynced(slugs.length === 0 ? 'Nothing to sync: no endpoint is published here.' : `Synced: ${slugs.join(', ')}.`);
      await status.reload();
    });
  const heartbeat = status.data?.last_heartbeat;
  return (
    <li class="policy" data-marketplace={marketplace.name}>
      <div class="policy-head">
        <span>
          <strong>{marketplace.name}</strong> {marketplace.is_default && <Badge tone="good">default</Badge>}
        </span>
        <span class="hint">
          {marketplace.url} as {marketplace.username}
        </span>
      </div>
      {status.data && (
        <ul class="facts-inline">
          <li data-fact="session">
            {status.data.logged_in ? 'Logged in' : 'Not logged in yet: knode logs in when it first needs the hub'}
          </li>
          <li data-fact="heartbeat">
            {heartbeat
              ? heartbeat.ok
                ? `Last heartbeat ${date(heartbeat.at)}: taken`
                : `Last heartbeat ${date(heartbeat.at)}: refused (${heartbeat.error ?? 'no reason given'})`
              : 'No heartbeat yet: one goes every 30 s once an endpoint is published here and a public URL is set'}
          </li>
          <li data-fact="published">
            {status.data.published_endpoints.length === 0
              ? 'Nothing published here'
              : `Published: ${status.data.published_endpoints.join(', ')}`}
          </li>
        </ul>
      )}
      <ErrorNotice error={status.error ?? failure} />
      {synced && <Notice kind="success">{synced}</Notice>}
      <div class="form-actions">
        <button type="button" class="secondary small" onClick={() => void sync()}>
          Sync
        </button>
        {!marketplace.is_default && (
          <button
            type="button"
            class="secondary small"
            onClick={() => void act(() => patch(apiPath`/marketplaces/${marketplace.id}`, { is_default: true }))}
          >
            Make default
          </button>
        )}
        <button
          type="button"
          class="danger small"
          aria-label={`Remove ${marketplace.name}`}
          onClick={() => {
            if (confirm(`Remove '${marketplace.name}'? Its publications stay on the hub until you unpublish them.`)) {
              void act(() => del(apiPath`/marketplaces/${marketplace.id}`));
            }
          }}
        >
          Remove
        </button>
      </div>
    </li>
  );
}
