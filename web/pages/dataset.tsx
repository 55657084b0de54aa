import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { QUERY_THRESHOLD_DEFAULT, SEARCH_LIMIT_MAX } from '../../src/http/field-bounds.ts';
import { apiPath, del, get, post } from '../api.ts';
import { DatasetProgress } from '../components/dataset-progress.tsx';
import { DatasetSelection } from '../components/dataset-selection.tsx';
import { DatasetStatus, isBusy } from '../components/dataset-status.tsx';
import { FeedStatus } from '../components/feed-status.tsx';
import { References as ReferenceList } from '../components/references.tsx';
import { Empty, ErrorNotice, Loading, Notice, PageHeader, SelectField, SubmitButton, TextField } from '../components/ui.tsx';
import { datasetSource } from '../lib/datasets.ts';
import { count, date } from '../lib/format.ts';
import { useFirstRender, usePoll, useResource, useSubmission, useTitle } from '../lib/hooks.ts';
import type { Dataset, DatasetFile, Page, References } from '../views.ts';

export function DatasetPage(props: { id: string }) {
  const dataset = useResource<Dataset>(apiPath`/datasets/${props.id}`);
  useTitle(dataset.data?.name ?? 'Dataset');
  const busy = dataset.data ? isBusy(dataset.data) : false;
  // Every 2 s while files wait (one request: the general API limits allow 100 a minute), else every 15 s.
  // Set (synchronously) once the dataset is being deleted: a poll sent after the DELETE would find it gone.
  const leaving = useRef(false);
  usePoll(async () => leaving.current || (await dataset.reload()), busy ? 2000 : 15_000, dataset.data !== undefined);
  if (dataset.error && !dataset.data) return <ErrorNotice error={dataset.error} />;
  if (!dataset.data) return <Loading what="the dataset" />;
  return <View dataset={dataset.data} reload={dataset.reload} leaving={leaving} />;
}

function View(props: { dataset: Dataset; reload: () => Promise<void>; leaving: { current: boolean } }) {
  useFirstRender();
  const { dataset } = props;
  const { route } = useLocation();
  const [actionError, setActionError] = useState<Error | undefined>(undefined);
  const [acting, setActing] = useState<string | undefined>(undefined);

  const act = async (name: string, work: () => Promise<unknown>, reload = true) => {
    setActing(name);
    setActionError(undefined);
    try {
      await work();
      if (reload) await props.reload();
    } catch (error) {
      setActionError(error as Error);
    } finally {
      setActing(undefined);
    }
  };

  const remove = () =>
    act(
      'delete',
      async () => {
        if (!confirm(`Delete the dataset '${dataset.name}' and its index? The folder itself is not touched.`)) return;
        props.leaving.current = true;
        try {
          await del(apiPath`/datasets/${dataset.id}`);
        } catch (error) {
          props.leaving.current = false;
          throw error;
        }
        route('/datasets');
      },
      false,
    );

  return (
    <>
      <PageHeader
        title={
          <>
            {dataset.name} <DatasetStatus dataset={dataset} />
          </>
        }
        subtitle={<span class="path">{datasetSource(dataset)}</span>}
        actions={
          <>
            {dataset.status === 'stopped' ? (
              <button
                type="button"
                disabled={acting !== undefined}
                onClick={() => act('start', () => post(apiPath`/datasets/${dataset.id}/start`))}
              >
                Start
              </button>
            ) : (
              <button
                type="button"
                class="secondary"
                disabled={acting !== undefined}
                onClick={() => act('stop', () => post(apiPath`/datasets/${dataset.id}/stop`))}
              >
                Stop
              </button>
            )}
            <button
              type="button"
              class="secondary"
              disabled={acting !== undefined || dataset.status === 'stopped'}
              onClick={() => act('reindex', () => post(apiPath`/datasets/${dataset.id}/reindex`))}
            >
              Reindex
            </button>
            <button type="button" class="danger" disabled={acting !== undefined} onClick={remove}>
              Delete
            </button>
          </>
        }
      />
      <ErrorNotice error={actionError} />
      {dataset.status === 'error' && dataset.error && <Notice kind="error">{dataset.error}</Notice>}
      {dataset.status === 'stopped' && <Notice>Stopped: the folder is not watched and nothing is indexed. Search still works.</Notice>}
      {dataset.search.vectors_missing && <Notice>Keyword search only: {dataset.search.vectors_missing}.</Notice>}
      {dataset.dtype === 'rss' && <FeedStatus dataset={dataset} />}
      <DatasetProgress dataset={dataset} />
      {dataset.dtype === 'local_file' && <DatasetSelection dataset={dataset} reload={props.reload} />}
      <Search dataset={dataset} />
      <Files dataset={dataset} reload={props.reload} />
      <section class="card" aria-labelledby="configuration-title">
        <h2 id="configuration-title">Configuration</h2>
        <dl class="facts">
          {Object.entries(dataset.configuration).map(([key, value]) => (
            <div key={key}>
              <dt>{key}</dt>
              <dd>{configurationValue(value)}</dd>
            </div>
          ))}
          <div>
            <dt>ranking</dt>
            <dd>
              {dataset.search.ranking}, {dataset.search.calibration}
            </dd>
          </div>
        </dl>
      </section>
    </>
  );
}

const MODES = [
  { value: 'hybrid', label: 'Hybrid' },
  { value: 'keyword', label: 'Keyword (BM25)' },
  { value: 'vector', label: 'Vector' },
];

function Search(props: { dataset: Dataset }) {
  const [query, setQuery] = useState('');
  const [mode, setMode] = useState('hybrid');
  const [limit, setLimit] = useState('5');
  const [threshold, setThreshold] = useState('0');
  const [result, setResult] = useState<{ query: string; mode: string; references: References } | undefined>(undefined);
  const { busy, errors, failure, run } = useSubmission();

  const search = (event: Event) => {
    event.preventDefault();
    if (query.trim() === '') return;
    void run(async () => {
      const references = await post<References>(apiPath`/datasets/${props.dataset.id}/search`, {
        query,
        mode,
        limit: Number(limit) || 5,
        similarity_threshold: Number(threshold) || 0,
      });
      setResult({ query, mode, references });
    });
  };

  return (
    <section class="card" aria-labelledby="search-title">
      <h2 id="search-title">Search</h2>
      <form class="search-form" onSubmit={search}>
        <TextField
          label="Search the dataset"
          type="search"
          value={query}
          onInput={setQuery}
          error={errors.query}
          required
          placeholder="What are you looking for?"
        />
        <SelectField label="Mode" value={mode} onChange={setMode} options={MODES} error={errors.mode} />
        <TextField label="Results" type="number" min={1} max={SEARCH_LIMIT_MAX} value={limit} onInput={setLimit} error={errors.limit} />
        <TextField
          label="Threshold"
          type="number"
          min={0}
          max={1}
          step={0.05}
          value={threshold}
          onInput={setThreshold}
          error={errors.similarity_threshold}
        />
        <SubmitButton busy={busy} busyLabel="Searching…">
          Search
        </SubmitButton>
      </form>
      <p class="hint threshold-note" data-threshold-note>
        {Number(threshold) > 0 ? `Results scoring below ${threshold} are left out.` : 'Threshold 0: every result is shown, however weak.'}{' '}
        An endpoint's playground (and its consumers) leave out passages scoring below {QUERY_THRESHOLD_DEFAULT} unless a query asks
        otherwise.
      </p>
      <ErrorNotice error={failure} />
      {result && (
        <div class="search-results" aria-live="polite">
          <p class="hint">
            {result.references.documents.length === 0
              ? `Nothing found for “${result.query}”${props.dataset.ingestion.files_indexed === 0 ? ': no file is indexed yet' : ''}.`
              : `${result.references.documents.length} results for “${result.query}” in ${result.mode} mode, ${String(result.references.provider_info.response_time_ms ?? '?')} ms.`}
          </p>
          <ReferenceList documents={result.references.documents} open />
        </div>
      )}
    </section>
  );
}

const FILE_FILTERS = [
  { value: '', label: 'All files' },
  { value: 'failed', label: 'Failed' },
  { value: 'pending', label: 'Waiting or in progress' },
  { value: 'indexed', label: 'Indexed' },
  { value: 'removed', label: 'Removed' },
];
const FILES_PAGE = 200;
/** States with work left (`searchable`: found by keywords, vectors still to come). */
const PENDING = new Set(['queued', 'indexing', 'searchable']);

/** Whether `files` (the first page of the list, fetched after the dataset) shows work its counters do not count. */
function countersBehind(files: readonly DatasetFile[], dataset: Dataset): boolean {
  const listed = files.filter((file) => file.status !== 'removed').length;
  const pendingListed = files.some((file) => PENDING.has(file.status));
  return listed > dataset.ingestion.files_total || (pendingListed && dataset.ingestion.files_pending === 0);
}

function Files(props: { dataset: Dataset; reload: () => Promise<void> }) {
  const [files, setFiles] = useState<DatasetFile[]>([]);
  const [total, setTotal] = useState(0);
  const [shown, setShown] = useState(FILES_PAGE);
  const [filter, setFilter] = useState('');
  const [error, setError] = useState<Error | undefined>(undefined);
  const { ingestion } = props.dataset;
  const signature = `${ingestion.files_total}/${ingestion.files_indexed}/${ingestion.files_failed}/${ingestion.files_pending}`;

  // Asked again when the counters move, not on a timer of its own.
  useEffect(() => {
    let current = true;
    get<Page<DatasetFile>>(apiPath`/datasets/${props.dataset.id}/files?skip=0&limit=${shown}`)
      .then((page) => {
        if (!current) return;
        setFiles(page.items);
        setTotal(page.total);
        setError(undefined);
        // Files the counters above do not know of yet (a feed's first items, a scan that ended after the
        // dataset was read): the dataset is read again now, so its card and its 2-second polling follow at
        // once instead of at the next 15-second poll. Once per fetch of this list, so never a loop.
        if (countersBehind(page.items, props.dataset)) void props.reload();
      })
      .catch((caught) => current && setError(caught as Error));
    return () => {
      current = false;
    };
  }, [props.dataset.id, signature, shown]);

  const visible = files.filter((file) => (filter === '' ? true : filter === 'pending' ? PENDING.has(file.status) : file.status === filter));

  return (
    <section class="card" aria-labelledby="files-title">
      <div class="card-head">
        <h2 id="files-title">Files</h2>
        <SelectField label="Show" value={filter} onChange={setFilter} options={FILE_FILTERS} />
      </div>
      <ErrorNotice error={error} />
      {visible.length === 0 ? (
        <Empty>{files.length === 0 ? 'No file seen yet.' : 'No file in this state.'}</Empty>
      ) : (
        <div class="table-scroll">
          <table class="table files">
            <caption class="visually-hidden">Files of the dataset and their state</caption>
            <thead>
              <tr>
                <th scope="col">File</th>
                <th scope="col">State</th>
                <th scope="col" class="num">
                  Chunks
                </th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {visible.map((file) => (
                <tr key={file.path} class={file.status === 'failed' ? 'row-bad' : undefined}>
                  <td class="path">
                    {file.path}
                    {file.error && <div class="error-text">{file.error}</div>}
                  </td>
                  <td>
                    <span class={`state state-${file.status}`}>{file.status}</span>
                  </td>
                  <td class="num">{count(file.chunks)}</td>
                  <td class="nowrap">{date(file.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {total > files.length && (
        <p>
          Showing the first {count(files.length)} of {count(total)} files.{' '}
          <button type="button" class="link" onClick={() => setShown(shown + FILES_PAGE * 5)}>
            Show more
          </button>
        </p>
      )}
    </section>
  );
}

/** A configuration value as read: a list of strings one per line (a dataset's feeds), other objects as JSON. */
function configurationValue(value: unknown): string {
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value.join('\n');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
