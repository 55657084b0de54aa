import { Type } from 'typebox';

/** One feed of an `rss` dataset and how its polls are going (GET /api/v1/datasets/{id}/feeds). */
export const FeedStateView = Type.Object({
  url: Type.String(),
  /** When it was last polled, and last read (or answered 304); null before the first poll. */
  polled_at: Type.Union([Type.String(), Type.Null()]),
  succeeded_at: Type.Union([Type.String(), Type.Null()]),
  /** Why the last poll failed (null once a poll succeeds): the feed is tried again at the next poll. */
  error: Type.Union([Type.String(), Type.Null()]),
  /** The items of this feed the dataset keeps. */
  items: Type.Integer(),
});
