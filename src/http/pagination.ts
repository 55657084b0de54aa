import { Type } from 'typebox';
import type { Window } from '../db/windows.ts';

/** `?skip=&limit=` of list routes (API-CONTRACT 1): both optional; either one asks for the envelope. */
export const PageQuery = Type.Object({
  skip: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
});

export interface PageRequest {
  skip?: number;
  limit?: number;
}

export interface Page<T> {
  items: T[];
  total: number;
  skip: number;
  limit: number;
}

export const DEFAULT_PAGE_LIMIT = 100;

/** Whether the caller asked for the `{items, total, skip, limit}` envelope instead of a plain array. */
export function wantsPage(query: PageRequest): boolean {
  return query.skip !== undefined || query.limit !== undefined;
}

/** The rows a list request wants: a window of them for the envelope, every row (undefined) for a plain array. */
export function windowOf(query: PageRequest): Window | undefined {
  return wantsPage(query) ? { skip: query.skip ?? 0, limit: query.limit ?? DEFAULT_PAGE_LIMIT } : undefined;
}

/** The rows of a list's window (read by SQL) and how many rows the list has in all. */
export interface Listed<T> {
  items: T[];
  total: number;
}

/** A list route's answer: the plain array, or the envelope when a window was asked for. */
export function listAnswer<T>(listed: Listed<T>, window: Window | undefined): T[] | Page<T> {
  return window ? { items: listed.items, total: listed.total, ...window } : listed.items;
}

/** A plain array, or the envelope when asked for, from an in-memory list. */
export function pageOf<T>(items: T[], query: PageRequest): T[] | Page<T> {
  if (!wantsPage(query)) return items;
  const skip = query.skip ?? 0;
  const limit = query.limit ?? DEFAULT_PAGE_LIMIT;
  return { items: items.slice(skip, skip + limit), total: items.length, skip, limit };
}

/** The response schema of a list route: either shape. */
export function listOf<T extends Parameters<typeof Type.Array>[0]>(item: T) {
  return Type.Union([
    Type.Array(item),
    Type.Object({ items: Type.Array(item), total: Type.Integer(), skip: Type.Integer(), limit: Type.Integer() }),
  ]);
}
