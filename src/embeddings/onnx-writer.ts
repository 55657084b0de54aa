/**
 * Writes an ONNX model (the protobuf messages of onnx.proto that a plain inference graph needs) without a
 * protobuf library: the converter of USE-lite (use-lite-convert.ts) builds a few hundred nodes and their
 * weights, and encoding those messages by hand keeps the output byte-for-byte deterministic (fields in
 * one fixed order, no maps) and adds no dependency. Field numbers are those of onnx/onnx.proto (IR 8).
 */

/** TensorProto.DataType values used here. */
export const OnnxType = { FLOAT: 1, UINT8: 2, INT8: 3, INT32: 6, INT64: 7, BOOL: 9 } as const;
export type OnnxElementType = (typeof OnnxType)[keyof typeof OnnxType];

export type OnnxAttribute =
  | { readonly kind: 'int'; readonly value: number }
  | { readonly kind: 'ints'; readonly value: readonly number[] }
  | { readonly kind: 'float'; readonly value: number }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'tensor'; readonly value: OnnxTensor };

export interface OnnxNode {
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly name: string;
  readonly attributes?: Readonly<Record<string, OnnxAttribute>>;
  /** Operator domain: '' (ai.onnx) unless a contrib operator is meant ('com.microsoft'). */
  readonly domain?: string;
}

export interface OnnxTensor {
  readonly name: string;
  readonly type: OnnxElementType;
  readonly dims: readonly number[];
  /** Little-endian element bytes (raw_data). */
  readonly bytes: Uint8Array;
}

interface OnnxValueInfo {
  readonly name: string;
  readonly type: OnnxElementType;
  /** A number is a fixed size, a string a named dynamic one. */
  readonly dims: readonly (number | string)[];
}

export interface OnnxModel {
  readonly producer: string;
  readonly producerVersion: string;
  readonly docString?: string;
  readonly opsets: readonly { readonly domain: string; readonly version: number }[];
  readonly graphName: string;
  readonly nodes: readonly OnnxNode[];
  readonly initializers: readonly OnnxTensor[];
  readonly inputs: readonly OnnxValueInfo[];
  readonly outputs: readonly OnnxValueInfo[];
  readonly metadata?: Readonly<Record<string, string>>;
}

const IR_VERSION = 8;

/** Encodes `model` as an ONNX file's bytes. */
export function encodeOnnxModel(model: OnnxModel): Uint8Array {
  const graph = new Writer();
  for (const node of model.nodes) graph.message(1, encodeNode(node));
  graph.string(2, model.graphName);
  for (const tensor of model.initializers) graph.message(5, encodeTensor(tensor));
  for (const input of model.inputs) graph.message(11, encodeValueInfo(input));
  for (const output of model.outputs) graph.message(12, encodeValueInfo(output));

  const out = new Writer();
  out.varintField(1, IR_VERSION);
  out.string(2, model.producer);
  out.string(3, model.producerVersion);
  if (model.docString) out.string(6, model.docString);
  out.message(7, graph);
  for (const opset of model.opsets) {
    const entry = new Writer();
    if (opset.domain) entry.string(1, opset.domain);
    entry.varintField(2, opset.version);
    out.message(8, entry);
  }
  for (const [key, value] of Object.entries(model.metadata ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const entry = new Writer();
    entry.string(1, key);
    entry.string(2, value);
    out.message(14, entry);
  }
  return out.finish();
}

function encodeNode(node: OnnxNode): Writer {
  const out = new Writer();
  for (const input of node.inputs) out.string(1, input);
  for (const output of node.outputs) out.string(2, output);
  out.string(3, node.name);
  out.string(4, node.op);
  for (const [name, attribute] of Object.entries(node.attributes ?? {})) out.message(5, encodeAttribute(name, attribute));
  if (node.domain) out.string(7, node.domain);
  return out;
}

function encodeAttribute(name: string, attribute: OnnxAttribute): Writer {
  const out = new Writer();
  out.string(1, name);
  switch (attribute.kind) {
    case 'float':
      out.float32Field(2, attribute.value);
      out.varintField(20, 1);
      break;
    case 'int':
      out.varintField(3, attribute.value);
      out.varintField(20, 2);
      break;
    case 'string':
      out.string(4, attribute.value);
      out.varintField(20, 3);
      break;
    case 'tensor':
      out.message(5, encodeTensor(attribute.value));
      out.varintField(20, 4);
      break;
    case 'ints':
      for (const value of attribute.value) out.varintField(8, value);
      out.varintField(20, 7);
      break;
  }
  return out;
}

function encodeTensor(tensor: OnnxTensor): Writer {
  const out = new Writer();
  for (const dim of tensor.dims) out.varintField(1, dim);
  out.varintField(2, tensor.type);
  out.string(8, tensor.name);
  out.bytesField(9, tensor.bytes);
  return out;
}

function encodeValueInfo(info: OnnxValueInfo): Writer {
  const shape = new Writer();
  for (const dim of info.dims) {
    const dimension = new Writer();
    if (typeof dim === 'number') dimension.varintField(1, dim);
    else dimension.string(2, dim);
    shape.message(1, dimension);
  }
  const tensorType = new Writer();
  tensorType.varintField(1, info.type);
  tensorType.message(2, shape);
  const type = new Writer();
  type.message(1, tensorType);
  const out = new Writer();
  out.string(1, info.name);
  out.message(2, type);
  return out;
}

const encoder = new TextEncoder();

/** Protobuf wire format: a list of chunks concatenated at the end (nested messages know their length). */
class Writer {
  private readonly chunks: Uint8Array[] = [];
  private scratch: number[] = [];
  length = 0;

  varintField(field: number, value: number): void {
    this.tag(field, 0);
    this.varint(value);
  }

  float32Field(field: number, value: number): void {
    this.tag(field, 5);
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    this.bytes(bytes);
  }

  string(field: number, value: string): void {
    this.bytesField(field, encoder.encode(value));
  }

  bytesField(field: number, value: Uint8Array): void {
    this.tag(field, 2);
    this.varint(value.byteLength);
    this.bytes(value);
  }

  message(field: number, message: Writer): void {
    this.tag(field, 2);
    this.varint(message.length);
    this.flush();
    this.chunks.push(...message.parts());
    this.length += message.length;
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const chunk of this.parts()) {
      out.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return out;
  }

  private parts(): Uint8Array[] {
    this.flush();
    return this.chunks;
  }

  private tag(field: number, wireType: number): void {
    this.varint(field * 8 + wireType);
  }

  /** Non-negative integers as they are; negative ones as 64-bit two's complement (ten bytes), as int64 wants. */
  private varint(value: number): void {
    if (!Number.isSafeInteger(value)) throw new RangeError(`cannot encode ${value} as a varint`);
    let rest = BigInt.asUintN(64, BigInt(value));
    do {
      const byte = Number(rest & 0x7fn);
      rest >>= 7n;
      this.scratch.push(rest > 0n ? byte | 0x80 : byte);
      this.length++;
    } while (rest > 0n);
  }

  private bytes(value: Uint8Array): void {
    this.flush();
    this.chunks.push(value);
    this.length += value.byteLength;
  }

  private flush(): void {
    if (this.scratch.length === 0) return;
    this.chunks.push(Uint8Array.from(this.scratch));
    this.scratch = [];
  }
}
