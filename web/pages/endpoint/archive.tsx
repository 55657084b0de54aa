import { useEffect, useRef, useState } from 'preact/hooks';
import { apiPath, post } from '../../api.ts';
import { ErrorNotice, Notice } from '../../components/ui.tsx';
import { useResource, useSubmission } from '../../lib/hooks.ts';
import type { Endpoint, Marketplace } from '../../views.ts';

/**
 * Archiving an endpoint (API-CONTRACT 4, "Archive"), on its settings: what archiving does, said before it is
 * done and confirmed in place (the confirmation takes the focus; Cancel gives it back to the button), and
 * Unarchive once it is archived. After either, the focus goes to the section's heading, above what happened.
 */
export function ArchiveSection(props: { endpoint: Endpoint; reload: () => Promise<void> }) {
  const { endpoint } = props;
  const marketplaces = useResource<Marketplace[]>('/marketplaces/');
  const [confirming, setConfirming] = useState(false);
  const [done, setDone] = useState<string | undefined>(undefined);
  const { busy, failure, run } = useSubmission();
  const heading = useRef<HTMLHeadingElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const question = useRef<HTMLHeadingElement>(null);
  const cancelled = useRef(false);

  useEffect(() => {
    if (confirming) question.current?.focus();
    else if (cancelled.current) {
      cancelled.current = false;
      opener.current?.focus();
    }
  }, [confirming]);

  const names = (ids: string[]) =>
    ids.map((id) => marketplaces.data?.find((marketplace) => marketplace.id === id)?.name ?? 'a marketplace').join(', ');
  const where = endpoint.published_to.length > 0 ? `the marketplaces it is published on (${names(endpoint.published_to)})` : 'SyftHub';

  const act = async (action: 'archive' | 'unarchive') => {
    const succeeded = await run(async () => {
      const view = await post<Endpoint>(apiPath`/endpoints/${endpoint.slug}/${action}`, {});
      setDone(
        action === 'archive'
          ? `Archived. It is hidden from SyftHub and refuses queries; its policies and usage are kept.`
          : view.published_to.length > 0
            ? `Unarchived: it answers queries again and is published again on ${names(view.published_to)}.`
            : 'Unarchived: it answers queries again.',
      );
      setConfirming(false);
      await props.reload();
    });
    if (succeeded) heading.current?.focus();
  };

  return (
    <section class="card" aria-labelledby="archive-title" data-archive>
      <h2 id="archive-title" tabIndex={-1} ref={heading}>
        {endpoint.archived ? 'Archived' : 'Archive the endpoint'}
      </h2>
      {done && <Notice kind="success">{done}</Notice>}
      <ErrorNotice error={failure} />
      {endpoint.archived ? (
        <>
          <p>
            Archived on {new Date(endpoint.archived_at ?? endpoint.updated_at).toLocaleString()}: hidden from SyftHub, its queries are
            refused (your own too), and its policies and usage are kept.
            {endpoint.archived_from.length > 0 && ` Unarchiving publishes it again on ${names(endpoint.archived_from)}.`}
          </p>
          <button type="button" class="secondary" disabled={busy} onClick={() => void act('unarchive')}>
            {busy ? 'Unarchiving…' : `Unarchive ${endpoint.name}`}
          </button>
        </>
      ) : confirming ? (
        <section aria-labelledby="archive-question" data-archive-confirm>
          <h3 id="archive-question" tabIndex={-1} ref={question}>
            Archive {endpoint.name}?
          </h3>
          <ul>
            <li>It is hidden from SyftHub: taken off {where}, and published there again when you unarchive it.</li>
            <li>Its queries are refused, from consumers and from you, until it is unarchived.</li>
            <li>It is kept with its policies and usage; nothing is deleted.</li>
          </ul>
          <div class="form-actions">
            <button type="button" class="danger" disabled={busy} onClick={() => void act('archive')}>
              {busy ? 'Archiving…' : 'Archive'}
            </button>
            <button
              type="button"
              class="secondary"
              disabled={busy}
              onClick={() => {
                cancelled.current = true;
                setConfirming(false);
              }}
            >
              Cancel
            </button>
          </div>
        </section>
      ) : (
        <>
          <p>Put it away without deleting it: hidden from SyftHub and refusing queries, kept with its policies and usage.</p>
          <button
            type="button"
            class="secondary"
            ref={opener}
            onClick={() => {
              setDone(undefined);
              setConfirming(true);
            }}
          >
            Archive…
          </button>
        </>
      )}
    </section>
  );
}
