// A thread's background calls (SPEC §16) in the Thread tab: each task with its status and what the server says it
// is doing (from `mcpServer/task/updated`), its result read when asked, and Cancel while it runs.
import type {
  AppServerClient,
  TaskInfo,
  ToolCallResult,
} from "mcp-app-server-client";
import { h, replace } from "./dom.js";
import { explain, failureView } from "./failure.js";

const RUNNING: ReadonlySet<TaskInfo["status"]> = new Set([
  "working",
  "input_required",
]);

export class TaskList {
  readonly element = h("ul", { className: "plain", "data-role": "tasks" });
  private readonly tasks = new Map<string, TaskInfo>();
  private threadId: string | undefined;

  constructor(
    private readonly client: () => AppServerClient,
    private readonly show: (
      name: string,
      result: ToolCallResult | HTMLElement,
    ) => void,
  ) {}

  /** A new thread: its list starts empty. */
  reset(threadId: string): void {
    this.threadId = threadId;
    this.tasks.clear();
    this.render();
  }

  /** A task started here or changed (`mcpServer/task/updated`). */
  update(threadId: string, task: TaskInfo): void {
    if (threadId !== this.threadId) return;
    const known = this.tasks.get(task.taskId);
    if (
      known !== undefined &&
      !RUNNING.has(known.status) &&
      RUNNING.has(task.status)
    )
      return; // the start's answer came late
    this.tasks.set(task.taskId, task);
    this.render();
  }

  private render(): void {
    replace(
      this.element,
      [...this.tasks.values()].map((task) =>
        h(
          "li",
          { "data-task": task.taskId, "data-status": task.status },
          h(
            "span",
            { className: `badge task-${task.status}` },
            task.status.replace("_", " "),
          ),
          ` ${task.server ?? ""} / ${task.tool ?? ""}`,
          task.statusMessage === undefined
            ? null
            : h("span", { className: "meta" }, ` — ${task.statusMessage}`),
          " ",
          RUNNING.has(task.status)
            ? h(
                "button",
                {
                  type: "button",
                  "data-role": "task-cancel",
                  onclick: () => void this.cancel(task),
                },
                "Cancel",
              )
            : h(
                "button",
                {
                  type: "button",
                  "data-role": "task-result",
                  onclick: () => void this.result(task),
                },
                "Show result",
              ),
        ),
      ),
      this.tasks.size === 0
        ? h("li", { className: "empty" }, "No background calls.")
        : null,
    );
  }

  private async result(task: TaskInfo): Promise<void> {
    const threadId = this.threadId;
    if (threadId === undefined) return;
    const name = task.tool ?? task.taskId;
    try {
      this.show(name, await this.client().taskResult(threadId, task.taskId));
    } catch (error) {
      this.show(
        name,
        h(
          "div",
          { "data-role": "call-error" },
          failureView(explain(error, `read ${name}`)),
        ),
      );
    }
  }

  private async cancel(task: TaskInfo): Promise<void> {
    const threadId = this.threadId;
    if (threadId === undefined) return;
    try {
      this.update(
        threadId,
        await this.client().cancelTask(threadId, task.taskId),
      );
    } catch (error) {
      this.show(
        task.tool ?? task.taskId,
        failureView(explain(error, "cancel the background call")),
      );
    }
  }
}
