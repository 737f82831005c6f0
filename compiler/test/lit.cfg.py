# lit configuration for the device linker's IR tests.
import os
import lit.formats

config.name = "oxide-device-linker"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".ll"]
# Inputs/ holds what tests read (PTX, IR), not tests.
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.oxide_test_exec_root
config.substitutions.append(("%oxide-opt", os.path.join(config.oxide_tools_dir, "oxide-opt")))
config.substitutions.append(("%oxide-link", os.path.join(config.oxide_tools_dir, "oxide-link")))
config.substitutions.append(("FileCheck", config.filecheck))
config.environment["OXIDE_CUDA_PATH"] = config.cuda_path
if os.path.exists(os.path.join(config.cuda_path, "nvvm/libdevice/libdevice.10.bc")):
    config.available_features.add("libdevice")
if os.access(os.path.join(config.cuda_path, "bin/ptxas"), os.X_OK):
    config.available_features.add("ptxas")
# `not`, `FileCheck` and friends come with LLVM's tools.
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, os.environ.get("PATH", "")])
