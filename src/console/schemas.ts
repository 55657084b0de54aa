import { Type } from 'typebox';

/** What `GET /api/v1/folders` answers (the console's folder browser reads it as its type). */
const FolderEntryView = Type.Object({
  name: Type.String(),
  path: Type.String(),
  documents: Type.Integer(),
  models: Type.Integer(),
  complete: Type.Boolean(),
});

const FileEntryView = Type.Object({
  name: Type.String(),
  path: Type.String(),
  size: Type.Integer(),
  kind: Type.Enum(['document', 'model']),
});

export const FolderListingView = Type.Object({
  path: Type.Union([Type.String(), Type.Null()]),
  parent: Type.Union([Type.String(), Type.Null()]),
  folders: Type.Array(FolderEntryView),
  files: Type.Array(FileEntryView),
  truncated: Type.Boolean(),
});
