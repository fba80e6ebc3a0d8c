import { Worker } from "node:worker_threads";
import { escapeHtml } from "../../lib/escape-html.js";

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

/**
 * One renderer thread per process, started at the first publish with notes. Renders run one at a
 * time, each with its own deadline from when the thread takes it: notes that miss theirs end the
 * thread (and its work) and leave the next render to a fresh one, so one product's slow notes
 * never cut another's short. While a render waits, its timer holds the process open (a
 * migration may be the only thing running); the idle thread never does.
 */
class NotesRenderer {
  #worker: Worker | null = null;
  #queue: Promise<unknown> = Promise.resolve();

  render(markdown: string, deadlineMs: number): Promise<string | null> {
    const next = this.#queue.then(() => this.#renderNow(markdown, deadlineMs));
    this.#queue = next;
    return next;
  }

  #renderNow(markdown: string, deadlineMs: number): Promise<string | null> {
    const worker = this.#start();
    return new Promise((resolve) => {
      const finish = (html: string | null) => {
        clearTimeout(timer);
        worker.off("message", onMessage);
        worker.off("exit", onExit);
        resolve(html);
      };
      const onMessage = (html: string) => finish(html);
      const onExit = () => finish(null);
      const timer = setTimeout(() => {
        this.#stop(worker);
        finish(null);
      }, deadlineMs);
      worker.on("message", onMessage);
      worker.on("exit", onExit);
      worker.postMessage(markdown);
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    // Not the process's own flags (`--input-type` or a loader would break the thread).
    const worker = new Worker(workerUrl, { execArgv: [] });
    worker.unref();
    worker.on("error", () => this.#stop(worker));
    worker.on("exit", () => {
      if (this.#worker === worker) this.#worker = null;
    });
    this.#worker = worker;
    return worker;
  }

  #stop(worker: Worker): void {
    if (this.#worker === worker) this.#worker = null;
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

/** Notes as escaped text: a paragraph per blank-line-separated block, line breaks kept. */
export function plainTextHtml(markdown: string): string {
  return markdown
    .split(/\n\s*\n/)
    .filter((block) => block.trim() !== "")
    .map((block) => `<p>${escapeHtml(block).replace(/\n/g, "<br>\n")}</p>\n`)
    .join("");
}
