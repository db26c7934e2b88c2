"""TFRecord framing and the protobuf wire format of SequenceExamples, read without TensorFlow
(harness.data.tfrecord); the WikiWeb2M fixture pages written with tests/data/tfrecord_writer."""

import json

import pytest

from harness.data.tfrecord import (crc32c, decode_feature, decode_feature_list, masked_crc32c,
                                   read_tfrecords, split_sequence_example)
from tests.conftest import FIXTURES
from tests.data.tfrecord_writer import write_tfrecord

PAGES = FIXTURES / "wikiweb2m" / "pages.jsonl"
SUCCULENT = "https://en.wikipedia.org/wiki/Succulent_plant"


@pytest.fixture
def shard(tmp_path):
    pages = [json.loads(line) for line in PAGES.read_text(encoding="utf-8").splitlines()]
    return write_tfrecord(tmp_path / "wikiweb2m-test.tfrecord.gz", pages)


def test_crc32c_known_values():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c(b"") == 0
    assert masked_crc32c(b"") == 0xA282EAD8


def test_tfrecord_reader_and_decoder_round_trip(shard):
    records = list(read_tfrecords(shard, "wikiweb2m", verify_data_crc=True))
    assert [loc for loc, _ in records] == [f"{shard.name} record {k}" for k in range(4)]
    context, lists = split_sequence_example(records[0][1])
    assert decode_feature(context["page_url"]) == [SUCCULENT.encode()]
    assert decode_feature(context["page_contains_images"]) == [1]
    assert decode_feature_list(lists["section_parent_index"]) == [[-1], [0], [0], [2], [0]]
    assert decode_feature_list(lists["section_image_width"]) == [[640, 800], [], [], [320], []]
    assert decode_feature_list(lists["section_title"])[3] == [b"Leaves"]


def test_decoder_reads_what_protobuf_writes():
    """The reader against the protobuf library's own encoder (messages of tensorflow's
    feature.proto / example.proto, defined here from their field numbers)."""
    pytest.importorskip("google.protobuf")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fd = descriptor_pb2.FileDescriptorProto(name="tf_example_test.proto", package="tftest",
                                            syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto

    def message(name, *fields, map_entry=False):
        m = fd.message_type.add(name=name)
        if map_entry:
            m.options.map_entry = True
        for fname, number, ftype, label, type_name, oneof in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = f".tftest.{type_name}"
            if oneof is not None:
                f.oneof_index = oneof
        return m

    rep, opt = F.LABEL_REPEATED, F.LABEL_OPTIONAL
    message("BytesList", ("value", 1, F.TYPE_BYTES, rep, None, None))
    message("FloatList", ("value", 1, F.TYPE_FLOAT, rep, None, None))
    message("Int64List", ("value", 1, F.TYPE_INT64, rep, None, None))
    feat = message("Feature", ("bytes_list", 1, F.TYPE_MESSAGE, opt, "BytesList", 0),
                   ("float_list", 2, F.TYPE_MESSAGE, opt, "FloatList", 0),
                   ("int64_list", 3, F.TYPE_MESSAGE, opt, "Int64List", 0))
    feat.oneof_decl.add(name="kind")
    message("FeaturesEntry", ("key", 1, F.TYPE_STRING, opt, None, None),
            ("value", 2, F.TYPE_MESSAGE, opt, "Feature", None), map_entry=True)
    message("Features", ("feature", 1, F.TYPE_MESSAGE, rep, "FeaturesEntry", None))
    message("FeatureList", ("feature", 1, F.TYPE_MESSAGE, rep, "Feature", None))
    message("FeatureListsEntry", ("key", 1, F.TYPE_STRING, opt, None, None),
            ("value", 2, F.TYPE_MESSAGE, opt, "FeatureList", None), map_entry=True)
    message("FeatureLists", ("feature_list", 1, F.TYPE_MESSAGE, rep, "FeatureListsEntry", None))
    message("SequenceExample", ("context", 1, F.TYPE_MESSAGE, opt, "Features", None),
            ("feature_lists", 2, F.TYPE_MESSAGE, opt, "FeatureLists", None))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    SequenceExample = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("tftest.SequenceExample"))

    ex = SequenceExample()
    ex.context.feature["page_title"].bytes_list.value.append("Half Dome é".encode())
    ex.context.feature["page_contains_images"].int64_list.value.append(0)
    ex.context.feature["score"].float_list.value.extend([0.5, -2.0])
    depth = ex.feature_lists.feature_list["section_parent_index"]
    for v in (-1, 0, 0):
        depth.feature.add().int64_list.value.append(v)
    text = ex.feature_lists.feature_list["section_text"]
    for v in ("a", "", "c"):
        text.feature.add().bytes_list.value.append(v.encode())
    text.feature.add()  # a section with no value at all
    context, lists = split_sequence_example(ex.SerializeToString())
    assert decode_feature(context["page_title"]) == ["Half Dome é".encode()]
    assert decode_feature(context["page_contains_images"]) == [0]
    assert decode_feature(context["score"]) == [0.5, -2.0]
    assert decode_feature_list(lists["section_parent_index"]) == [[-1], [0], [0]]
    assert decode_feature_list(lists["section_text"]) == [[b"a"], [b""], [b"c"], []]
