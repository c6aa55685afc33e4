"""Drives a hub with the official ``agent-protocol-client`` (1.1.0). Runs in that
client's own venv (it pins pydantic<2), started by test_official_client.py:

    python official_client_script.py BASE_URL WORK_DIR

Prints one JSON document with what it saw."""

import asyncio
import json
import os
import sys

from agent_protocol_client import (
    AgentApi,
    ApiClient,
    ApiException,
    Configuration,
    StepRequestBody,
    TaskRequestBody,
)


async def main(url: str, work: str) -> dict:
    seen: dict = {"steps": []}
    async with ApiClient(Configuration(host=url)) as client:
        api = AgentApi(client)
        task = await api.create_agent_task(TaskRequestBody(
            input="Write the word 'Washington' to a .txt file",
            additional_input={"app_id": "official-client"}))
        seen["task_id"] = task.task_id
        for i in range(10):
            step = await api.execute_agent_task_step(
                task.task_id, StepRequestBody(input=f"step {i}"))
            seen["steps"].append({"step_id": step.step_id, "status": step.status,
                                  "output": step.output, "is_last": step.is_last,
                                  "artifacts": [a.file_name for a in step.artifacts]})
            if step.is_last:
                break
        again = await api.get_agent_task_step(task.task_id, seen["steps"][0]["step_id"])
        seen["first_step_again"] = again.output
        listed = await api.list_agent_task_steps(task.task_id, current_page=1, page_size=2)
        seen["steps_pagination"] = listed.pagination.to_dict()

        path = os.path.join(work, "notes.txt")
        with open(path, "wb") as f:
            f.write(b"Washington\n")
        artifact = await api.upload_agent_task_artifacts(task.task_id, file=path,
                                                         relative_path="docs")
        seen["uploaded"] = artifact.to_dict()
        content = await api.download_agent_task_artifact(task.task_id, artifact.artifact_id)
        seen["downloaded"] = bytes(content).decode()
        artifacts = await api.list_agent_task_artifacts(task.task_id)
        seen["artifact_names"] = sorted(a.file_name for a in artifacts.artifacts)
        tasks = await api.list_agent_tasks(current_page=1, page_size=1)
        seen["tasks_pagination"] = tasks.pagination.to_dict()
        try:
            await api.get_agent_task("no-such-task")
        except ApiException as exc:
            seen["unknown_task"] = {"status": exc.status, "body": json.loads(exc.body)}
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
