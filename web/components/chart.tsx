import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  /** A CSS colour or custom property (`--good`), read when the chart is drawn. */
  color: string;
  values: (number | null)[];
}

/**
 * A time chart (uPlot: 48 kB, canvas, no dependencies): stacked bars for counts (the first series on top),
 * lines for the rest. `times` are the buckets' starts in seconds. The totals are also written beside it.
 */
export function TimeChart(props: { title: string; times: number[]; series: ChartSeries[]; kind: 'bars' | 'lines'; unit?: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const style = getComputedStyle(document.documentElement);
    const colour = (value: string) => (value.startsWith('--') ? style.getPropertyValue(value).trim() : value);
    const muted = colour('--muted');
    const bars = uPlot.paths.bars?.({ size: [0.8, 48] });
    const stacked = props.kind === 'bars';
    // Stacked by drawing each bar as tall as itself and every series after it, first series first (the later
    // ones paint over its lower part); the legend shows each series' own value.
    const drawn = stacked
      ? props.series.map((_, index) =>
          props.times.map((_time, at) => props.series.slice(index).reduce((sum, series) => sum + (series.values[at] ?? 0), 0)),
        )
      : props.series.map((series) => series.values);
    const axis = { stroke: muted, grid: { stroke: colour('--border'), width: 1 }, ticks: { stroke: colour('--border') } };
    const chart = new uPlot(
      {
        width: Math.max(280, element.clientWidth),
        height: 200,
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [axis, { ...axis, ...(props.unit ? { label: props.unit } : {}) }],
        series: [
          {},
          ...props.series.map((series) => ({
            label: series.label,
            stroke: colour(series.color),
            width: stacked ? 0 : 2,
            value: (_u: uPlot, _value: number | null, _series: number, at: number | null) =>
              at === null || series.values[at] === null || series.values[at] === undefined ? '–' : String(series.values[at]),
            ...(stacked ? { fill: colour(series.color), points: { show: false }, ...(bars ? { paths: bars } : {}) } : { spanGaps: true }),
          })),
        ],
      },
      [props.times, ...drawn],
      element,
    );
    const resize = () => chart.setSize({ width: Math.max(280, element.clientWidth), height: 200 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      chart.destroy();
    };
  }, [props.times, props.series, props.kind, props.unit]);
  return <figure class="chart" role="img" aria-label={props.title} ref={box} />;
}
