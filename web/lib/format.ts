/** How numbers, sizes, durations and dates read in the console. */

const numbers = new Intl.NumberFormat('en');

export function count(value: number): string {
  return numbers.format(value);
}

export function plural(value: number, one: string, many = `${one}s`): string {
  return `${count(value)} ${value === 1 ? one : many}`;
}

export function bytes(value: number): string {
  if (value < 1024) return `${value} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let scaled = value / 1024;
  let unit = 0;
  while (scaled >= 1024 && unit < units.length - 1) {
    scaled /= 1024;
    unit++;
  }
  return `${scaled.toFixed(scaled < 10 ? 1 : 0)} ${units[unit]}`;
}

export function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '…';
  if (seconds < 1) return 'under a second';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function rate(perSecond: number, unit: string): string {
  if (perSecond >= 10) return `${Math.round(perSecond)} ${unit}/s`;
  if (perSecond >= 1) return `${perSecond.toFixed(1)} ${unit}/s`;
  return `${(perSecond * 60).toFixed(1)} ${unit}/min`;
}

export function score(value: number): string {
  return value.toFixed(3);
}

export function money(value: number): string {
  return value === 0 ? '0' : value < 0.01 ? value.toPrecision(2) : value.toFixed(4).replace(/0+$/, '').replace(/\.$/, '');
}

const dates = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'short' });

export function date(iso: string): string {
  const parsed = new Date(iso);
  return Number.isNaN(parsed.getTime()) ? iso : dates.format(parsed);
}

/** A name as a slug: lower case, letters and digits joined by single hyphens. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
}

/** The last part of a path. */
export function baseName(path: string): string {
  const parts = path.split('/').filter(Boolean);
  return parts.at(-1) ?? path;
}
