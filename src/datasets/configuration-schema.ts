import { type Static, Type } from 'typebox';
import { EMBEDDER_PATTERN } from '../config.ts';
import { BASE_URL_FORMAT } from '../util/json-schema.ts';

/**
 * What a dataset's configuration may hold, per dtype (API-CONTRACT 4): types, ranges, patterns and
 * defaults, served as they are to clients that build forms. A key given as null counts as not given, and
 * unknown keys are kept as given. What no schema can say is checked in code (configuration.ts): the folder
 * exists and lies inside the tenant's roots, chunkOverlap is below chunkSize, and each listed file type
 * is one the parsers know; the embedder and collectionName defaults depend on the server and the name.
 */

export const DATASET_DTYPES = ['local_file', 'rss'] as const;
export type DatasetDtype = (typeof DATASET_DTYPES)[number];

/** The file types a new dataset indexes unless told otherwise (the parsers know a few more: `markdown`, `xlsx`, `csv`, `json`). */
const DEFAULT_FILE_TYPES = 'pdf,txt,md,docx,html,htm';

/** How often an `rss` dataset polls its feeds. */
const FEED_INTERVALS = ['15m', '1h', '6h', '1d'] as const;

/** The newest items an `rss` dataset keeps, at most (issue 27). */
const MAX_FEED_ITEMS = 5_000;

const Port = Type.Integer({
  minimum: 1,
  maximum: 65535,
  description: 'Accepted and kept for compatibility: the store is embedded, no port is opened',
});

/** What every dataset type takes besides its source: its index, embedder, chunking and price. */
const IndexFields = {
  collectionName: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9_]+$',
      description: "Default: from the dataset's name",
      errorMessage: 'Use letters, digits and underscores only, e.g. my_papers',
    }),
  ),
  embedder: Type.Optional(
    Type.String({
      maxLength: 500,
      pattern: EMBEDDER_PATTERN.source,
      examples: ['use-lite', 'use-lite-int8', 'transformers:Xenova/all-MiniLM-L6-v2', 'openai:text-embedding-3-small'],
      description: "Default: the server's SVC_EMBEDDER",
      errorMessage: 'Choose use-lite, use-lite-int8, transformers:<model> (e.g. transformers:Xenova/all-MiniLM-L6-v2) or openai:<model>',
    }),
  ),
  chunkSize: Type.Optional(Type.Integer({ minimum: 100, maximum: 100_000, default: 1000, description: 'Characters per chunk' })),
  chunkOverlap: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 50_000, default: 100, description: 'Characters shared by neighbouring chunks; below chunkSize' }),
  ),
  cost_per_query: Type.Optional(Type.Number({ minimum: 0, maximum: 1_000_000, default: 0 })),
  httpPort: Type.Optional(Port),
  grpcPort: Type.Optional(Port),
  base_url: Type.Optional(
    Type.String({ maxLength: 2000, format: BASE_URL_FORMAT, description: 'Server of an openai: embedder (OpenAI-compatible)' }),
  ),
  api_key: Type.Optional(Type.String({ maxLength: 2000, description: 'Key of an openai: embedder; stored encrypted, shown masked' })),
};

const LocalFileConfigurationSchema = Type.Object(
  {
    ingestionPath: Type.String({
      maxLength: 4096,
      description: "Absolute path of a folder inside the tenant's ingestion roots; read recursively, hidden files skipped",
    }),
    ...IndexFields,
    fileTypes: Type.Optional(
      Type.Union([Type.String({ maxLength: 1000 }), Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 })], {
        default: DEFAULT_FILE_TYPES,
        description:
          'Comma-separated file types (or a list of them) to index; spreadsheets and data files (xlsx, csv, json) only when named',
      }),
    ),
  },
  { description: 'A folder of documents, indexed on this machine' },
);

export const RssConfigurationSchema = Type.Object(
  {
    feeds: Type.Array(
      Type.String({
        maxLength: 2000,
        pattern: '^https://[^\\s]+$',
        examples: ['https://example.com/feed.xml'],
        errorMessage: 'Give the https address of an RSS or Atom feed, e.g. https://example.com/feed.xml (http is not read)',
      }),
      {
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        description: 'RSS or Atom feed URLs, https only (a redirect to http is refused too)',
      },
    ),
    interval: Type.Optional(
      Type.Enum([...FEED_INTERVALS], { default: '1h', description: 'How often the feeds are polled: every 15 min, 1 h, 6 h or daily' }),
    ),
    maxItems: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_FEED_ITEMS,
        default: MAX_FEED_ITEMS,
        description: 'The newest items kept (by date); older ones leave the index',
      }),
    ),
    ...IndexFields,
  },
  { description: 'RSS or Atom feeds, polled, their newest items indexed with their title, link and date' },
);

/** The configuration schema of each dataset dtype. */
export const DATASET_CONFIGURATION_SCHEMAS = {
  local_file: LocalFileConfigurationSchema,
  rss: RssConfigurationSchema,
} as const satisfies Record<DatasetDtype, unknown>;

/** A local_file configuration once its schema passed: the schema's defaults are filled in. */
export type CheckedLocalFileConfiguration = Static<typeof LocalFileConfigurationSchema> &
  Required<Pick<Static<typeof LocalFileConfigurationSchema>, 'chunkSize' | 'chunkOverlap' | 'fileTypes' | 'cost_per_query'>>;

/** An rss configuration once its schema passed: the schema's defaults are filled in. */
export type CheckedRssConfiguration = Static<typeof RssConfigurationSchema> &
  Required<Pick<Static<typeof RssConfigurationSchema>, 'chunkSize' | 'chunkOverlap' | 'interval' | 'maxItems' | 'cost_per_query'>>;
