"""DeepSpeed's own pipeline partitioner on the plan's layers (its PyPI package, 0.19.8, ``make
test-frameworks``; skipped without it, as test_framework_parsers.py says). The pipeline engine's
PipelineModule with partition_method 'type:<layer class>' (Megatron-DeepSpeed's GPTModelPipe
sets 'type:transformer'; the DeepSpeed export asks a script for it) weighs the specs of that
class 1 and the others 0 and cuts them with ``deepspeed.runtime.utils.partition_balanced``
(runtime/pipe/module.py L412-417 @ edaa722). Run here on the weights of GPTModelPipe's specs
(megatron/model/gpt_model.py L339-439 @ 4efb479: the fp16 cast and the embedding, the
transformer layers, the final norm, the head and the cast back; MoE models add the MoE-loss
function after the layers, weight 0 too), it must give the split the plan evaluated
(shapes.split_layers with the DeepSpeed profile's pipeline_extra_layers_first)."""

import pytest

from test_framework_parsers import _need, _plan


@pytest.mark.parametrize("args,layers,pp", [
    (("llama-2-7b", "--nodes", 3, "--pp", 3, "--zero", 1, "--framework", "deepspeed"), 32, 3),
    (("llama-3-405b", "--node", "dgx-h100", "--nodes", 16, "--tp", 8, "--pp", 16, "--zero", 1,
      "--framework", "megatron-deepspeed"), 126, 16),
])
def test_deepspeed_partitions_the_layers_as_planned(run, args, layers, pp):
    planned = _plan(run, *args)["stage_layers"]  # before the import, which logs on stdout
    utils = _need("deepspeed.runtime.utils")
    weights = [0, 0] + [1] * layers + [0, 0, 0]  # cast, embedding | layers | norm, head, cast
    parts = utils.partition_balanced(weights=weights, num_parts=pp)
    built = [sum(weights[a:b]) for a, b in zip(parts, parts[1:])]
    assert built == planned
    assert planned == ([11, 11, 10] if pp == 3 else [8] * 14 + [7, 7])
