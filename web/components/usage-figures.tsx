import type { ComponentChildren } from 'preact';
import { useMemo } from 'preact/hooks';
import { type ChartSeries, TimeChart } from './chart.tsx';

/**
 * The pieces the tenant's Analytics page and an endpoint's Usage tab both draw their figures with: a figure
 * among the summary's cards, a chart under its heading, the charts' time axis, and a table's column heads
 * (numbers right-aligned). Each page keeps what its figures are.
 */

/** One card of a `<dl class="stats">`: `name` marks it for tests and styles (data-stat), `valueClass` colours the value. */
export function Stat(props: { name: string; label: string; valueClass?: string | undefined; children: ComponentChildren }) {
  return (
    <div data-stat={props.name}>
      <dt>{props.label}</dt>
      <dd class={props.valueClass}>{props.children}</dd>
    </div>
  );
}

/** A chart of a `.charts` grid under its heading; `title` describes it to a screen reader. */
export function ChartPanel(props: {
  heading: string;
  title: string;
  times: number[];
  series: ChartSeries[];
  kind: 'bars' | 'lines';
  unit?: string;
}) {
  const { heading, ...chart } = props;
  return (
    <div>
      <h3>{heading}</h3>
      <TimeChart {...chart} />
    </div>
  );
}

/** The buckets' starts in seconds since the epoch, as the charts place them. */
export function useBucketTimes(buckets: readonly { start: string }[]): number[] {
  return useMemo(() => buckets.map((bucket) => Date.parse(bucket.start) / 1000), [buckets]);
}

/** A table's head: one column heading each, a number column (`num`) aligned right as its cells are. */
export function ColumnHeads(props: { columns: readonly (string | { num: string })[] }) {
  return (
    <thead>
      <tr>
        {props.columns.map((column) =>
          typeof column === 'string' ? (
            <th key={column} scope="col">
              {column}
            </th>
          ) : (
            <th key={column.num} scope="col" class="num">
              {column.num}
            </th>
          ),
        )}
      </tr>
    </thead>
  );
}
