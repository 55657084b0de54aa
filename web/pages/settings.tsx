import { useState } from 'preact/hooks';
import { ApiError, apiPath, del, type Me, patch, post } from '../api.ts';
import { Badge, ErrorNotice, Loading, Notice, PageHeader, SubmitButton, TextField } from '../components/ui.tsx';
import { bytes, date } from '../lib/format.ts';
import { useFirstRender, usePoll, useResource, useSubmission, useTitle } from '../lib/hooks.ts';
import { Connect, type Marketplace } from './publish.tsx';

interface MarketplaceStatus {
  logged_in: boolean;
  last_heartbeat: { at: string; ok: boolean; error: string | null } | null;
  published_endpoints: string[];
}

interface Tunnel {
  connected: boolean;
  public_url: string | null;
  has_token: boolean;
  state: 'stopped' | 'online' | 'reconnecting';
  retry_in_seconds: number | null;
  error: string | null;
}

interface Storage {
  development_mode: boolean;
  data_dir: string | null;
  database_bytes: number | null;
  datasets: { id: string; name: string; bytes: number }[];
}

interface PublicUrl {
  public_url: string | null;
  source: 'set' | 'configured' | 'detected' | 'tunnel' | null;
}

/** Where the public URL came from, in words. */
const SOURCES = {
  set: 'set here or through the API',
  configured: 'SVC_PUBLIC_URL',
  detected: "detected: this machine's public IP address",
  tunnel: 'the tunnel',
} as const;

interface Member {
  email: string;
  role: 'owner' | 'member';
  created_at: string;
}

/** Operating knode: where it is listed, how the internet reaches it, and who shares the tenant. */
export function SettingsPage() {
  useTitle('Settings');
  const me = useResource<Me>('/auth/me');
  return (
    <>
      <PageHeader title="Settings" subtitle="Your marketplaces, how the internet reaches this knode, and who works in your tenant." />
      <Marketplaces />
      <PublicAddress />
      {me.data ? <Members tenant={me.data.tenant_name} me={me.data.email} /> : <ErrorNotice error={me.error} />}
      <ThisKnode />
    </>
  );
}

function Marketplaces() {
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
      {list.data && <Connect first={list.data.length === 0} onConnected={list.reload} embedded />}
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
      const answer = await post<Record<string, string[]>>('/endpoints/sync', { marketplace_ids: [marketplace.id] });
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

/** The public URL and the tunnel: operator settings (the admin key, or this machine in development mode). */
function PublicAddress() {
  const url = useResource<PublicUrl>('/settings/public-url');
  const tunnel = useResource<Tunnel>('/settings/proxy');
  // While the tunnel reconnects, its countdown and reason are kept current.
  usePoll(tunnel.reload, 2000, tunnel.data?.state === 'reconnecting');
  const refused = [url.error, tunnel.error].some((error) => error instanceof ApiError && error.status === 403);
  return (
    <section class="card" aria-labelledby="address-title">
      <h2 id="address-title">Public URL and tunnel</h2>
      {refused ? (
        <Notice>
          Only the operator changes how the internet reaches this knode: with SVC_ADMIN_API_KEY set, use the API with the admin key (see the
          README, "Connecting to SyftHub and publishing").
        </Notice>
      ) : (
        <>
          <PublicUrlForm current={url.data} error={url.error} reload={url.reload} />
          <TunnelControls
            tunnel={tunnel.data}
            error={tunnel.error}
            reload={async () => {
              await Promise.all([tunnel.reload(), url.reload()]);
            }}
          />
        </>
      )}
    </section>
  );
}

function PublicUrlForm(props: { current: PublicUrl | undefined; error: ApiError | undefined; reload: () => Promise<void> }) {
  const [value, setValue] = useState('');
  const { busy, errors, failure, run } = useSubmission();
  const submit = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      await patch('/settings/public-url', { public_url: value });
      setValue('');
      await props.reload();
    });
  };
  return (
    <>
      <ErrorNotice error={props.error} />
      <p data-settings="public-url">
        {props.current?.public_url ? (
          <>
            Consumers reach this knode at <strong>{props.current.public_url}</strong> (from {SOURCES[props.current.source ?? 'set']}).
          </>
        ) : (
          'No public URL yet: the marketplace cannot send consumers here. Set one, or start the tunnel.'
        )}
      </p>
      <form class="inline-form" onSubmit={submit}>
        <TextField
          label="Public URL"
          type="url"
          required
          placeholder="https://knode.example.net"
          hint="Where the internet reaches this knode (a reverse proxy, a port forward); your default marketplace is told first."
          value={value}
          onInput={setValue}
          error={errors.public_url}
        />
        <SubmitButton busy={busy} busyLabel="Saving…">
          Save the URL
        </SubmitButton>
      </form>
      <ErrorNotice error={failure} />
    </>
  );
}

const TUNNEL_TONES = { stopped: 'muted', online: 'good', reconnecting: 'busy' } as const;

function TunnelControls(props: { tunnel: Tunnel | undefined; error: ApiError | undefined; reload: () => Promise<void> }) {
  const [token, setToken] = useState('');
  const submission = useSubmission();
  const { busy, failure } = submission;
  const { tunnel } = props;
  // Which way the tunnel is being started, for the busy label of that button only.
  const [via, setVia] = useState<'hub' | 'token'>('hub');
  const run = (work: () => Promise<unknown>) =>
    submission.run(async () => {
      await work();
      setToken('');
      await props.reload();
    });
  const start = (how: 'hub' | 'token', body: object) => {
    setVia(how);
    return run(() => post('/settings/proxy', body));
  };
  if (props.error?.status === 404) {
    // No marketplace yet: the Marketplaces card says so once; here, only what the tunnel will need.
    return (
      <div data-settings="tunnel">
        <h3>Tunnel</h3>
        <p class="hint">Offered here once a marketplace is connected: its name comes from your hub account.</p>
      </div>
    );
  }
  return (
    <div data-settings="tunnel">
      <h3>Tunnel {tunnel && <Badge tone={TUNNEL_TONES[tunnel.state]}>{tunnel.state}</Badge>}</h3>
      <ErrorNotice error={props.error} />
      {tunnel?.state === 'online' && <p>Online at {tunnel.public_url}.</p>}
      {tunnel?.state === 'reconnecting' && (
        <p>
          Reconnecting{tunnel.retry_in_seconds !== null ? ` in ${tunnel.retry_in_seconds} s` : ''}
          {tunnel.error ? `: ${tunnel.error}` : ''}.
        </p>
      )}
      {tunnel?.state !== 'stopped' ? (
        <button type="button" class="secondary" disabled={busy} onClick={() => void run(() => del('/settings/proxy'))}>
          Stop the tunnel
        </button>
      ) : (
        <>
          <p>
            Your SyftHub account hands knode a tunnel at your hub user name (<em>name</em>.syfthub.ngrok.app): one click, nothing to paste.
            Or start it with an authtoken of your own ngrok account. Either is stored encrypted, so the tunnel comes back after a restart.
          </p>
          <p>
            <button type="button" disabled={busy} onClick={() => void start('hub', { from_marketplace: true })}>
              {busy && via === 'hub' ? 'Starting…' : 'Start the tunnel with my SyftHub account'}
            </button>
          </p>
          <form
            class="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              void start('token', { tunnel_token: token });
            }}
          >
            <TextField
              label="ngrok authtoken"
              type="password"
              required
              autoComplete="off"
              hint="From your ngrok dashboard."
              value={token}
              onInput={setToken}
            />
            <SubmitButton busy={busy && via === 'token'} busyLabel="Starting…">
              Start the tunnel
            </SubmitButton>
          </form>
        </>
      )}
      <ErrorNotice error={failure} />
    </div>
  );
}

function Members(props: { tenant: string; me: string }) {
  const path = apiPath`/tenants/${props.tenant}/members`;
  const members = useResource<Member[]>(path);
  const [email, setEmail] = useState('');
  const submission = useSubmission();
  const { errors, failure } = submission;
  const owner = members.data?.some((member) => member.email === props.me && member.role === 'owner') ?? false;
  const run = (work: () => Promise<unknown>) =>
    submission.run(async () => {
      await work();
      await members.reload();
    });
  return (
    <section class="card" aria-labelledby="members-title">
      <h2 id="members-title">Members of {props.tenant}</h2>
      <p class="hint">Members manage the tenant's datasets, models and endpoints with you; they act in it with the X-Tenant-Name header.</p>
      <ErrorNotice error={members.error} />
      {members.data && (
        <table class="table" data-settings="members">
          <caption class="visually-hidden">Members of the tenant</caption>
          <thead>
            <tr>
              <th scope="col">E-mail</th>
              <th scope="col">Role</th>
              <th scope="col">Since</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.map((member) => (
              <tr key={member.email}>
                <td>{member.email}</td>
                <td>{member.role}</td>
                <td class="nowrap">{date(member.created_at)}</td>
                <td class="num">
                  {owner && member.role !== 'owner' && (
                    <button
                      type="button"
                      class="danger small"
                      aria-label={`Remove ${member.email}`}
                      onClick={() => void run(() => del(apiPath`/tenants/${props.tenant}/members/${member.email}`))}
                    >
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void run(async () => {
            await post(path, { email });
            setEmail('');
          });
        }}
      >
        <TextField
          label="Add a member by e-mail"
          type="email"
          required
          hint="They must have registered on this knode first."
          value={email}
          onInput={setEmail}
          error={errors.email}
        />
        <button type="submit">Add</button>
      </form>
      <ErrorNotice error={failure} />
    </section>
  );
}

/** How this knode runs (the admin key, or development mode), where its data is, and what each dataset takes. */
function ThisKnode() {
  const storage = useResource<Storage>('/settings/storage');
  const data = storage.data;
  return (
    <section class="card" aria-labelledby="knode-title">
      <h2 id="knode-title">This knode</h2>
      <ErrorNotice error={storage.error} />
      {data && (
        <>
          <p data-settings="mode">
            {data.development_mode
              ? 'Development mode (no SVC_ADMIN_API_KEY): the operator settings are open to requests made on this machine, and to nobody else.'
              : 'An admin key is set (SVC_ADMIN_API_KEY): the operator settings need it; your login manages your tenant.'}
          </p>
          {data.data_dir !== null && (
            <p>
              Data folder <span class="path">{data.data_dir}</span>
              {data.database_bytes !== null && `, database ${bytes(data.database_bytes)}`}.
            </p>
          )}
          {data.datasets.length > 0 && (
            <table class="table" data-settings="storage">
              <caption>Disk use of your datasets' indexes</caption>
              <thead>
                <tr>
                  <th scope="col">Dataset</th>
                  <th scope="col" class="num">
                    Size
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.datasets.map((dataset) => (
                  <tr key={dataset.id}>
                    <td>
                      <a href={`/datasets/${dataset.id}`}>{dataset.name}</a>
                    </td>
                    <td class="num">{bytes(dataset.bytes)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
