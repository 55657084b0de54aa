/**
 * A 2-D DOMMatrix for pdf.js, which evaluates `new DOMMatrix()` when its module loads and throws
 * "DOMMatrix is not defined" in Bun. pdf.js would borrow the class from @napi-rs/canvas through a
 * runtime `require`, but that native addon (31 MB of Skia) cannot be resolved inside the compiled
 * binary and knode only extracts text: matrices are used for rendering, never for text. So this
 * affine-only implementation is installed instead, before pdf.js is imported.
 */
type Init = ArrayLike<number> | undefined;

class AffineDOMMatrix {
  a = 1;
  b = 0;
  c = 0;
  d = 1;
  e = 0;
  f = 0;
  readonly is2D = true;

  constructor(init?: Init) {
    if (init === undefined) return;
    if (init.length !== 6) throw new TypeError('only 2-D matrices [a, b, c, d, e, f] are supported');
    this.set(init[0] ?? 1, init[1] ?? 0, init[2] ?? 0, init[3] ?? 1, init[4] ?? 0, init[5] ?? 0);
  }

  get isIdentity(): boolean {
    return this.a === 1 && this.b === 0 && this.c === 0 && this.d === 1 && this.e === 0 && this.f === 0;
  }

  /** this = this × other */
  multiplySelf(other: AffineDOMMatrix): this {
    return this.set(
      this.a * other.a + this.c * other.b,
      this.b * other.a + this.d * other.b,
      this.a * other.c + this.c * other.d,
      this.b * other.c + this.d * other.d,
      this.a * other.e + this.c * other.f + this.e,
      this.b * other.e + this.d * other.f + this.f,
    );
  }

  /** this = other × this */
  preMultiplySelf(other: AffineDOMMatrix): this {
    const product = new AffineDOMMatrix([other.a, other.b, other.c, other.d, other.e, other.f]).multiplySelf(this);
    return this.set(product.a, product.b, product.c, product.d, product.e, product.f);
  }

  multiply(other: AffineDOMMatrix): AffineDOMMatrix {
    return this.copy().multiplySelf(other);
  }

  translateSelf(tx = 0, ty = 0): this {
    return this.multiplySelf(new AffineDOMMatrix([1, 0, 0, 1, tx, ty]));
  }

  translate(tx = 0, ty = 0): AffineDOMMatrix {
    return this.copy().translateSelf(tx, ty);
  }

  scaleSelf(sx = 1, sy = sx): this {
    return this.multiplySelf(new AffineDOMMatrix([sx, 0, 0, sy, 0, 0]));
  }

  scale(sx = 1, sy = sx): AffineDOMMatrix {
    return this.copy().scaleSelf(sx, sy);
  }

  invertSelf(): this {
    const det = this.a * this.d - this.b * this.c;
    if (det === 0) return this.set(NaN, NaN, NaN, NaN, NaN, NaN);
    return this.set(
      this.d / det,
      -this.b / det,
      -this.c / det,
      this.a / det,
      (this.c * this.f - this.d * this.e) / det,
      (this.b * this.e - this.a * this.f) / det,
    );
  }

  inverse(): AffineDOMMatrix {
    return this.copy().invertSelf();
  }

  private copy(): AffineDOMMatrix {
    return new AffineDOMMatrix([this.a, this.b, this.c, this.d, this.e, this.f]);
  }

  private set(a: number, b: number, c: number, d: number, e: number, f: number): this {
    this.a = a;
    this.b = b;
    this.c = c;
    this.d = d;
    this.e = e;
    this.f = f;
    return this;
  }
}

/** Installs the class as the global DOMMatrix unless the runtime already has one. */
export function ensureDomMatrix(): void {
  const scope = globalThis as { DOMMatrix?: unknown };
  scope.DOMMatrix ??= AffineDOMMatrix;
}
