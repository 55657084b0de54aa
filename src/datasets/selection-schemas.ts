import { Type } from 'typebox';

/** `POST` and `DELETE /api/v1/datasets/{id}/selection`: the files and folders to add or remove. */
export const SelectionBody = Type.Object(
  {
    paths: Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), {
      minItems: 1,
      maxItems: 100,
      description: "Absolute paths of files and folders inside the tenant's ingestion roots",
    }),
  },
  { additionalProperties: false },
);

/**
 * One entry of a `local_file` dataset's selection and how far its files are (GET /api/v1/datasets/{id}/selection).
 * `source` is what its files' paths (and their chunks' `metadata.source`) start with: '' for the folder the
 * dataset was created with, whose files keep their paths relative to it.
 */
export const SelectionEntryView = Type.Object({
  path: Type.String(),
  kind: Type.Union([Type.Literal('file'), Type.Literal('folder')]),
  source: Type.String(),
  added_at: Type.String(),
  /** Its files (not removed), those searchable (keywords, vectors or both), indexed (vectors too), failed and with work left. */
  files: Type.Integer(),
  files_searchable: Type.Integer(),
  files_indexed: Type.Integer(),
  files_failed: Type.Integer(),
  files_pending: Type.Integer(),
  chunks: Type.Integer(),
  chunks_embedded: Type.Integer(),
  /** `indexing` while a file has work left, `failed` when every file failed, `empty` with no file (yet), else `indexed`. */
  status: Type.Union([Type.Literal('indexing'), Type.Literal('indexed'), Type.Literal('failed'), Type.Literal('empty')]),
  /** The share of its files done (indexed or failed), 0 to 1. */
  progress: Type.Number(),
});
