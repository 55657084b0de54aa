import { useEffect, useState } from 'preact/hooks';
import { apiPath, failure, get, post, send } from '../api.ts';
import { count } from '../lib/format.ts';
import type { Dataset, SelectionEntry } from '../views.ts';
import { SelectionBrowser } from './selection-browser.tsx';
import { Badge, Empty, ErrorNotice, ProgressBar } from './ui.tsx';

/**
 * The files and folders a `local_file` dataset reads (GET /datasets/{id}/selection), each with its own
 * progress and a Remove button (its files leave the index), and a browser to add several at once. Asked again
 * whenever the dataset's view changes (its page polls it), so progress moves without a timer of its own.
 */
export function DatasetSelection(props: { dataset: Dataset; reload: () => Promise<void> }) {
  const { dataset } = props;
  const [entries, setEntries] = useState<SelectionEntry[] | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [browsing, setBrowsing] = useState(false);
  const path = apiPath`/datasets/${dataset.id}/selection`;

  useEffect(() => {
    let current = true;
    get<SelectionEntry[]>(path)
      .then((found) => current && setEntries(found))
      .catch((caught) => current && setError(caught as Error));
    return () => {
      current = false;
    };
  }, [path, dataset.updated_at, dataset.ingestion.files_total, dataset.ingestion.files_pending, dataset.ingestion.chunks]);

  /** Runs a change; the answer is the selection afterwards. */
  const change = async (work: () => Promise<SelectionEntry[]>): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      setEntries(await work());
      await props.reload();
      return true;
    } catch (caught) {
      setError(caught as Error);
      return false;
    } finally {
      setBusy(false);
    }
  };
  const add = (paths: string[]) => change(() => post<SelectionEntry[]>(path, { paths }));
  const remove = (entry: SelectionEntry) =>
    change(async () => {
      const response = await send('DELETE', path, { paths: [entry.path] });
      if (!response.ok) throw await failure(response);
      return (await response.json()) as SelectionEntry[];
    });

  return (
    <section class="card" aria-labelledby="selection-title">
      <div class="card-head">
        <h2 id="selection-title">Files and folders</h2>
        {!browsing && (
          <button type="button" class="secondary" onClick={() => setBrowsing(true)}>
            Add files and folders…
          </button>
        )}
      </div>
      <ErrorNotice error={error} />
      {browsing && <SelectionBrowser busy={busy} onAdd={add} onClose={() => setBrowsing(false)} />}
      {entries === undefined ? (
        <Empty>Loading the selection…</Empty>
      ) : entries.length === 0 ? (
        <Empty>Nothing is selected: add files and folders to index them.</Empty>
      ) : (
        <ul class="selection-list" aria-label="Selected files and folders">
          {entries.map((entry) => (
            <li key={entry.path}>
              <div class="selection-head">
                <span class="path">{entry.path}</span>
                <Badge tone={entry.status === 'indexing' ? 'busy' : entry.status === 'failed' ? 'bad' : 'neutral'}>
                  {entry.kind} · {entry.status}
                </Badge>
                <button
                  type="button"
                  class="small danger"
                  disabled={busy}
                  aria-label={`Remove ${entry.path}`}
                  onClick={() => remove(entry)}
                >
                  Remove
                </button>
              </div>
              <ProgressBar
                value={entry.files_indexed}
                searchable={entry.files_searchable - entry.files_indexed}
                failed={entry.files_failed}
                max={entry.files}
                label={`Files of ${entry.path} indexed`}
              />
              <span class="hint">
                {count(entry.files_indexed)} of {count(entry.files)} files indexed, {count(entry.chunks)} chunks
                {entry.source ? ` · listed under ${entry.source}` : ''}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
