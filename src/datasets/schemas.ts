import { Type } from 'typebox';
import { Configuration, Name, ShortText, Timestamp, Uuid } from '../http/schemas.ts';
import { DATASET_DTYPES } from './configuration-schema.ts';

const DatasetStatus = Type.Enum(['starting', 'running', 'stopped', 'error']);

export const CreateDatasetBody = Type.Object({
  name: Name,
  dtype: Type.Enum([...DATASET_DTYPES]),
  configuration: Configuration,
  summary: Type.Optional(ShortText),
});

export const UpdateDatasetBody = Type.Object({
  name: Type.Optional(Name),
  summary: Type.Optional(ShortText),
});

/** A file is keyword-searchable before it is indexed (vectors too): see datasets/repository.ts, IngestionCounts. */
const IngestionCounters = Type.Object({
  files_total: Type.Integer(),
  files_searchable: Type.Integer(),
  files_indexed: Type.Integer(),
  files_pending: Type.Integer(),
  files_failed: Type.Integer(),
  chunks: Type.Integer(),
  chunks_embedded: Type.Integer(),
});

export const DatasetView = Type.Object({
  id: Uuid,
  name: Type.String(),
  summary: Type.String(),
  dtype: Type.String(),
  configuration: Configuration,
  status: DatasetStatus,
  /** Why the dataset is in status `error` (null otherwise). */
  error: Type.Union([Type.String(), Type.Null()]),
  ingestion: IngestionCounters,
  /**
   * How its chunks are ranked and scored: scores change when either does (after an upgrade, say). `fitted`:
   * when the dataset's own calibration was fitted, on how many pseudo-questions (and unanswerable ones) and
   * chunks; null while it uses the shipped constants (a dataset of fewer than 100 files keeps them).
   */
  search: Type.Object({
    ranking: Type.String(),
    calibration: Type.String(),
    fitted: Type.Union([
      Type.Object({ fitted_at: Type.String(), questions: Type.Integer(), unanswerable: Type.Integer(), chunks: Type.Integer() }),
      Type.Null(),
    ]),
    /** Why vector and hybrid searches cannot run on this server (a PostgreSQL without pgvector); null when they can. */
    vectors_missing: Type.Union([Type.String(), Type.Null()]),
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** The dataset as embedded in endpoint views (specification, Embedded views). */
export const EmbeddedDatasetView = Type.Object({
  id: Uuid,
  name: Type.String(),
  summary: Type.String(),
  dtype: Type.String(),
  configuration: Configuration,
});

export const DatasetFileView = Type.Object({
  path: Type.String(),
  /** `searchable`: its chunks are found by keywords, their vectors are being made; `indexed`: vectors too. */
  status: Type.Enum(['queued', 'indexing', 'searchable', 'indexed', 'failed', 'removed']),
  chunks: Type.Integer(),
  /** Chunks that have their vector (the first ones: they are embedded in order). */
  chunks_embedded: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
  updated_at: Timestamp,
});

export const ProvisionerView = Type.Object({
  dtype: Type.String(),
  status: Type.String(),
  message: Type.String(),
  details: Type.Record(Type.String(), Type.Unknown()),
});

/** The `references` object of a query answer (specification, Query response). */
export const ReferencesView = Type.Object({
  documents: Type.Array(
    Type.Object({
      document_id: Type.String(),
      content: Type.String(),
      similarity_score: Type.Number(),
      metadata: Type.Record(Type.String(), Type.Unknown()),
    }),
  ),
  provider_info: Type.Record(Type.String(), Type.Unknown()),
  cost: Type.Number(),
});

export const StorageView = Type.Object({
  /** No SVC_ADMIN_API_KEY: the operator's routes are open to requests made on this machine. */
  development_mode: Type.Boolean(),
  /** SVC_DATA_DIR and the database's size (with its write-ahead log): shown to the operator only. */
  data_dir: Type.Union([Type.String(), Type.Null()]),
  database_bytes: Type.Union([Type.Integer(), Type.Null()]),
  /** The tenant's datasets and about how much of the database each index takes. */
  datasets: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), bytes: Type.Integer() })),
});
