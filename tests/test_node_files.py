"""``ConfinedFiles`` of the node SDK without a hub: upload names and session ids that must not escape."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aop.file import protocol_pb2 as file_pb2
from aophub.agent.sandbox import Workspace
from aophub.node.workspace import ConfinedFiles, upload_name
from aophub.protocol.errors import HubError

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("filename", "stored"),
    [
        ("notes.txt", "notes.txt"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\report.pdf", "report.pdf"),
        ("bad\x00na\x1bme\x7f.txt", "badname.txt"),
        ("", "upload"),
        (".", "upload"),
        ("..", "upload"),
        ("dir/", "upload"),
    ],
)
def test_the_stored_name_is_the_base_name_without_separators_or_controls(filename: str, stored: str) -> None:
    assert upload_name(filename) == stored


@pytest.mark.parametrize("session_id", ["", ".", "..", "../x", "a/b", "/abs", "x\x00y"])
async def test_an_upload_naming_no_usable_session_is_refused_and_nothing_written(
    tmp_path: Path, session_id: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    files = ConfinedFiles(lambda: Workspace(root))
    request = file_pb2.UploadRequest(session_id=session_id, filename="a.txt", data=b"x")
    with pytest.raises(HubError) as refused:
        await files.file(file_pb2.ProtocolMessage(upload_request=request))
    assert refused.value.code == "FILE_OPERATION_FAILED"
    assert sorted(os.listdir(tmp_path)) == ["ws"]
    assert os.listdir(root) == []


async def test_an_upload_over_the_nodes_cap_is_refused(tmp_path: Path) -> None:
    files = ConfinedFiles(lambda: Workspace(tmp_path), max_upload_bytes=10)
    request = file_pb2.UploadRequest(session_id="s1", filename="a.txt", data=b"x" * 11)
    with pytest.raises(HubError) as refused:
        await files.file(file_pb2.ProtocolMessage(upload_request=request))
    assert "at most 10" in refused.value.message


async def test_an_upload_through_a_symlinked_uploads_directory_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "uploads")
    files = ConfinedFiles(lambda: Workspace(root))
    request = file_pb2.UploadRequest(session_id="s1", filename="a.txt", data=b"x")
    with pytest.raises(HubError) as refused:
        await files.file(file_pb2.ProtocolMessage(upload_request=request))
    assert refused.value.code == "FILE_OPERATION_FAILED"
    assert os.listdir(outside) == []


async def test_an_unsupported_file_case_is_operation_failed(tmp_path: Path) -> None:
    files = ConfinedFiles(lambda: Workspace(tmp_path), uploads=False)
    for message in (file_pb2.ProtocolMessage(), file_pb2.ProtocolMessage(result=file_pb2.Result())):
        with pytest.raises(HubError) as refused:
            await files.file(message)
        assert refused.value.code == "OPERATION_FAILED"
    request = file_pb2.UploadRequest(session_id="s1", filename="a.txt", data=b"x")
    with pytest.raises(HubError) as refused:
        await files.file(file_pb2.ProtocolMessage(upload_request=request))
    assert refused.value.code == "OPERATION_FAILED"
