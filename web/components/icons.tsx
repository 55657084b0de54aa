/** Small inline icons (no icon font, no emoji: both depend on what the machine has installed). */

export function FolderIcon() {
  return (
    <svg class="icon" viewBox="0 0 16 16" aria-hidden="true">
      <path d="M1.5 3.5h4l1.5 1.5h7.5v8h-13z" fill="currentColor" opacity="0.85" />
    </svg>
  );
}

export function FileIcon() {
  return (
    <svg class="icon" viewBox="0 0 16 16" aria-hidden="true">
      <path d="M3.5 1.5h6l3 3v10h-9z" fill="none" stroke="currentColor" stroke-width="1.3" />
      <path d="M9.5 1.5v3h3" fill="none" stroke="currentColor" stroke-width="1.3" />
    </svg>
  );
}
