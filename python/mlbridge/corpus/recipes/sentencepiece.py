"""sentencepiece 0.2.0, the last sdist that bundles protobuf-lite and the generated
builtin_pb/*.pb.cc (later ones need protoc). ``prepare`` writes the config.h CMake
would configure."""
import os

from ..programs import Program
from .recipe import Recipe

_SRC = "sentencepiece/src/"
_PB = "sentencepiece/third_party/protobuf-lite/"
_PROTOBUF = tuple(_PB + f + ".cc" for f in (
    "arena", "arenastring", "bytestream", "coded_stream", "common", "extension_set", "generated_enum_util",
    "generated_message_table_driven_lite", "generated_message_util", "implicit_weak_message", "int128",
    "message_lite", "parse_context", "repeated_field", "status", "statusor", "stringpiece",
    "stringprintf", "structurally_valid", "strutil", "time", "wire_format_lite", "zero_copy_stream",
    "zero_copy_stream_impl", "zero_copy_stream_impl_lite"))
# libsentencepiece (CMake's SPM_SRCS) and libsentencepiece_train (SPM_TRAIN_SRCS)
_LIB = tuple(_SRC + f + ".cc" for f in (
    "builtin_pb/sentencepiece.pb", "builtin_pb/sentencepiece_model.pb", "bpe_model", "char_model", "error",
    "filesystem", "model_factory", "model_interface", "normalizer", "sentencepiece_processor",
    "unigram_model", "util", "word_model")) + ("sentencepiece/third_party/absl/flags/flag.cc",)
_TRAIN = tuple(_SRC + f + ".cc" for f in (
    "builder", "unicode_script", "trainer_factory", "trainer_interface", "unigram_model_trainer",
    "word_model_trainer", "char_model_trainer", "bpe_model_trainer", "sentencepiece_trainer",
    "pretokenizer_for_training"))
_MAINS = ("spm_encode_main", "spm_decode_main", "spm_train_main")


def _config_h(top: str) -> None:
    out = os.path.join(top, "sentencepiece", "src", "config.h")
    text = ('#ifndef CONFIG_H_\n#define CONFIG_H_\n#define VERSION "0.2.0"\n'
            '#define PACKAGE "sentencepiece"\n#define PACKAGE_STRING "sentencepiece"\n#endif\n')
    if not os.path.isfile(out) or open(out).read() != text:
        with open(out, "w") as f:
            f.write(text)


def _objs(files):
    return tuple(f + ".o" for f in files)


_LIBS = ("stdc++", "m", "pthread")

RECIPE = Recipe(
    name="sentencepiece", version="0.2.0", language="c++", domain="machine learning (tokenizer)", lines=203298,
    description="SentencePiece: unsupervised subword tokenizer and trainer (BPE, unigram), with its "
                "bundled protobuf-lite; the spm_encode, spm_decode and spm_train tools",
    pypi="sentencepiece", sha256="a52c19171daaf2e697dc6cbe67684e0fa341b1248966f6aebb541de654d15843",
    sources=_PROTOBUF + _LIB + _TRAIN + tuple(_SRC + m + ".cc" for m in _MAINS),
    include=("sentencepiece/src", "sentencepiece/src/builtin_pb", "sentencepiece/third_party/protobuf-lite",
             "sentencepiece/third_party", "sentencepiece"),
    defines=("HAVE_PTHREAD=1", "_USE_INTERNAL_STRING_VIEW"),
    cxxflags=("-std=c++17", "-pthread"),
    prepare=_config_h,
    split="train",
    programs=(
        Program("spm_encode", "executable", modules=_objs(_PROTOBUF + _LIB + (_SRC + "spm_encode_main.cc",)),
                libs=_LIBS),
        Program("spm_decode", "executable", modules=_objs(_PROTOBUF + _LIB + (_SRC + "spm_decode_main.cc",)),
                libs=_LIBS),
        Program("spm_train", "executable",
                modules=_objs(_PROTOBUF + _LIB + _TRAIN + (_SRC + "spm_train_main.cc",)), libs=_LIBS),
    ),
)
