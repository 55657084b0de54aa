import { useRef } from 'preact/hooks';
import { count, duration, rate } from '../lib/format.ts';
import type { Dataset } from '../views.ts';
import { ProgressBar } from './ui.tsx';

interface Sample {
  at: number;
  done: number;
  chunks: number;
}

/**
 * Counters, and the rate and time left measured over the last half minute of samples. Where the server
 * reports them, files searchable by keywords before their vectors are made, and chunks embedded, are
 * shown too (the embedder is what takes time).
 */
export function DatasetProgress(props: { dataset: Dataset }) {
  const { ingestion } = props.dataset;
  const samples = useRef<Sample[]>([]);
  const done = ingestion.files_indexed + ingestion.files_failed;
  const embedded = ingestion.chunks_embedded ?? ingestion.chunks;
  const { filesPerSecond, chunksPerSecond } = ratesOver(samples.current, done, embedded, performance.now());
  const busy = ingestion.files_pending > 0 && props.dataset.status === 'running';
  const left = busy && filesPerSecond > 0 ? ingestion.files_pending / filesPerSecond : Number.POSITIVE_INFINITY;
  const searchable = ingestion.files_searchable;

  return (
    <section class="card" aria-labelledby="progress-title">
      <h2 id="progress-title">Indexing</h2>
      <ProgressBar
        value={ingestion.files_indexed}
        searchable={searchable === undefined ? 0 : searchable - ingestion.files_indexed}
        failed={ingestion.files_failed}
        max={ingestion.files_total}
        label="Files indexed"
      />
      <dl class="stats">
        <div data-stat="indexed">
          <dt>Indexed</dt>
          <dd>
            {count(ingestion.files_indexed)} <span class="of">of {count(ingestion.files_total)} files</span>
          </dd>
        </div>
        {searchable !== undefined && (
          <div data-stat="searchable">
            <dt>Searchable by keywords</dt>
            <dd>{count(searchable)}</dd>
          </div>
        )}
        <div data-stat="pending">
          <dt>Pending</dt>
          <dd>{count(ingestion.files_pending)}</dd>
        </div>
        <div data-stat="failed">
          <dt>Failed</dt>
          <dd class={ingestion.files_failed > 0 ? 'bad' : undefined}>{count(ingestion.files_failed)}</dd>
        </div>
        <div data-stat="chunks">
          <dt>Chunks</dt>
          <dd>
            {count(ingestion.chunks)}
            {ingestion.chunks_embedded !== undefined && ingestion.chunks_embedded < ingestion.chunks && (
              <span class="of block">{count(ingestion.chunks_embedded)} embedded</span>
            )}
          </dd>
        </div>
        <div data-stat="rate">
          <dt>Rate</dt>
          <RateFigures busy={busy} filesPerSecond={filesPerSecond} chunksPerSecond={chunksPerSecond} />
        </div>
        <div data-stat="left">
          <dt>Time left</dt>
          <dd>{timeLeft(props.dataset, busy, left)}</dd>
        </div>
      </dl>
    </section>
  );
}

/**
 * Adds a sample to `list` when the counts moved (or 1.5 s went by) and keeps the last half minute of them;
 * the rates of files and chunks over it (0 until it spans a second).
 */
function ratesOver(list: Sample[], done: number, chunks: number, now: number): { filesPerSecond: number; chunksPerSecond: number } {
  const last = list[list.length - 1];
  if (!last || last.done !== done || last.chunks !== chunks || now - last.at > 1500) {
    list.push({ at: now, done, chunks });
    while (list.length > 2 && now - (list[0]?.at ?? now) > 30_000) list.shift();
  }
  const first = list[0];
  const seconds = first ? (now - first.at) / 1000 : 0;
  if (!first || seconds <= 1) return { filesPerSecond: 0, chunksPerSecond: 0 };
  return { filesPerSecond: (done - first.done) / seconds, chunksPerSecond: (chunks - first.chunks) / seconds };
}

/** The rates while files are being indexed and something moves; a dash otherwise. */
function RateFigures(props: { busy: boolean; filesPerSecond: number; chunksPerSecond: number }) {
  if (!props.busy || (props.filesPerSecond <= 0 && props.chunksPerSecond <= 0)) return <dd>–</dd>;
  return (
    <dd>
      {rate(props.filesPerSecond, 'files')}
      <span class="of block">{rate(props.chunksPerSecond, 'chunks')}</span>
    </dd>
  );
}

/** "done" only once there was something to do and it is done; before the first file is seen, nothing. */
function timeLeft(dataset: Dataset, busy: boolean, left: number): string {
  const { ingestion } = dataset;
  if (busy) return Number.isFinite(left) ? duration(left) : 'measuring…';
  if (ingestion.files_pending > 0) return dataset.status === 'running' ? 'waiting' : 'paused';
  if (ingestion.files_total === 0) return dataset.status === 'starting' ? 'starting…' : '–';
  return 'done';
}
