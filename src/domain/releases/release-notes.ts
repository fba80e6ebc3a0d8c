import { Worker } from "node:worker_threads";

/**
 * Release notes are rendered once, when they are written (publish), and stored: the feeds and
 * the dashboard serve the stored HTML, so what a request costs never depends on what the notes
 * contain. Rendering runs on a thread of its own, so even the slowest Markdown never holds the
 * event loop, and within a deadline: notes that do not render within it are stored as escaped
 * plain text with their line breaks (still readable, never raw HTML).
 */
export const renderDeadlineMs = 2000;

// The thread runs the compiled worker: beside this module once built (dist/), and from dist/ when
// this module runs from source (the tests, whose global setup builds dist/ as `npm ci` does).
const workerUrl = import.meta.url.endsWith(".ts")
  ? new URL("../../../dist/domain/releases/release-notes-worker.js", import.meta.url)
  : new URL("./release-notes-worker.js", import.meta.url);

type Done = (html: string | null) => void;

/** One renderer thread per process, started at the first publish with notes, never holding it. */
class NotesRenderer {
  #worker: Worker | null = null;
  #pending = new Map<number, Done>();
  #nextId = 0;

  render(markdown: string, deadlineMs: number): Promise<string | null> {
    return new Promise((resolve) => {
      const id = this.#nextId++;
      const worker = this.#start();
      const timer = setTimeout(() => {
        // Past the deadline the thread is ended: its work stops with it.
        this.#pending.delete(id);
        resolve(null);
        this.#stop(worker);
      }, deadlineMs);
      timer.unref();
      this.#pending.set(id, (html) => {
        clearTimeout(timer);
        resolve(html);
      });
      worker.postMessage({ id, markdown });
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(workerUrl);
    worker.unref();
    worker.on("message", ({ id, html }: { id: number; html: string }) => {
      const done = this.#pending.get(id);
      this.#pending.delete(id);
      done?.(html);
    });
    worker.on("error", () => this.#stop(worker));
    worker.on("exit", () => this.#stop(worker));
    this.#worker = worker;
    return worker;
  }

  /** Ends the thread; the renders it still had fall back to plain text. */
  #stop(worker: Worker): void {
    if (this.#worker !== worker) return;
    this.#worker = null;
    for (const done of this.#pending.values()) done(null);
    this.#pending.clear();
    void worker.terminate();
  }
}

const renderer = new NotesRenderer();

/** The stored HTML of release notes (null for none): rendered Markdown, or within the deadline
 * escaped text. */
export async function renderReleaseNotes(
  markdown: string | null,
  deadlineMs = renderDeadlineMs,
): Promise<string | null> {
  if (markdown === null) return null;
  return (await renderer.render(markdown, deadlineMs)) ?? plainTextHtml(markdown);
}

const entities: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Notes as escaped text: a paragraph per blank-line-separated block, line breaks kept. */
export function plainTextHtml(markdown: string): string {
  return markdown
    .split(/\n\s*\n/)
    .filter((block) => block.trim() !== "")
    .map(
      (block) =>
        `<p>${block.replace(/[&<>"']/g, (c) => entities[c] ?? c).replace(/\n/g, "<br>\n")}</p>\n`,
    )
    .join("");
}
