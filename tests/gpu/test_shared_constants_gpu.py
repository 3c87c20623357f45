"""aotirt.load(..., share_constants_with=runner): a second package of the same model (here: a batch-4 "prefill" and a
batch-1 "decode" package of one MLP) takes the first one's weights instead of uploading its own: its outputs equal
those of the same package loaded on its own, it adds none of the weights' 64 MiB to the device's used memory (the
plain load adds them all), and it keeps working after the first runner is dropped. A package of another model with
the same parameter names but other values, or other names, is refused at load naming the first differences."""
import gc

import pytest

from conftest import compiled, requires_gpu, torch

pytestmark = requires_gpu

WEIGHT_MB = (2 * 2048 * 4096 + 4096 + 2048) * 4 / 2**20  # float32


class Mlp(torch.nn.Module if torch is not None else object):
    def __init__(self, seed=0, width=4096):
        super().__init__()
        torch.manual_seed(seed)
        self.up, self.down = torch.nn.Linear(2048, width), torch.nn.Linear(width, 2048)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def _packages():
    import aotirt
    opts = aotirt.CompileOptions(max_autotune=False)
    model = Mlp().cuda().eval()
    _, prefill = compiled("shared_prefill", lambda: model, (torch.randn(4, 2048, device="cuda"),), options=opts)
    _, decode = compiled("shared_decode", lambda: model, (torch.randn(1, 2048, device="cuda"),), options=opts)
    return model, prefill, decode


def _used_mb():
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    return (total - free) / 2**20


def test_a_second_package_of_the_same_model_takes_the_first_ones_weights():
    import aotirt
    model, prefill_path, decode_path = _packages()
    x1 = torch.randn(1, 2048, device="cuda")
    with torch.no_grad():
        want = model(x1)
    alone = aotirt.load(decode_path)
    expected = alone(x1)
    torch.testing.assert_close(expected, want, atol=2e-4, rtol=2e-4)
    del alone
    gc.collect()

    prefill = aotirt.load(prefill_path)
    before = _used_mb()
    decode = aotirt.load(decode_path, share_constants_with=prefill)
    shared_mb = _used_mb() - before
    assert shared_mb < WEIGHT_MB / 4, f"the shared load added {shared_mb:.1f} MiB (the weights are {WEIGHT_MB:.0f})"
    assert decode._model.shares_constants and not prefill._model.shares_constants
    assert torch.equal(decode(x1), expected)
    x4 = torch.randn(4, 2048, device="cuda")
    with torch.no_grad():
        torch.testing.assert_close(prefill(x4), model(x4), atol=2e-4, rtol=2e-4)
    before = _used_mb()
    own = aotirt.load(decode_path)
    own_mb = _used_mb() - before
    assert own_mb >= WEIGHT_MB * 0.9, f"the plain load added only {own_mb:.1f} MiB"
    del own
    # the first runner dropped: the second keeps its weights alive, and graph replays read them
    del prefill
    gc.collect()
    assert torch.equal(decode(x1), expected)
    graphed = aotirt.capture(decode, x1)
    assert torch.equal(graphed(x1), expected)


def test_packages_of_other_weights_or_other_names_are_refused():
    import aotirt
    _, prefill_path, _ = _packages()
    opts = aotirt.CompileOptions(max_autotune=False)
    _, other_values = compiled("shared_other_seed", lambda: Mlp(seed=1).cuda().eval(),
                               (torch.randn(1, 2048, device="cuda"),), options=opts)
    _, other_names = compiled("shared_other_width", lambda: torch.nn.Sequential(Mlp()).cuda().eval(),
                              (torch.randn(1, 2048, device="cuda"),), options=opts)
    prefill = aotirt.load(prefill_path)
    with pytest.raises(aotirt.RuntimeLoadError, match=r"cannot share constants with .*: 4 of its constants differ: "
                                                      r".*up\.weight \(other values\)"):
        aotirt.load(other_values, share_constants_with=prefill)
    with pytest.raises(aotirt.RuntimeLoadError, match=r"differ: .*0\.up\.weight \(not a constant of"):
        aotirt.load(other_names, share_constants_with=prefill)
    assert prefill(torch.randn(4, 2048, device="cuda")).shape == (4, 2048)  # and the first runner still runs
