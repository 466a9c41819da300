"""The TrainerCallback acts through a real transformers Trainer: a tiny Llama trained on the CPU
while the replayed climb stands in for the GPU."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

from conftest import CLIMB
from vramfit.integrations import TrainerCallback

MIB = 1 << 20


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids.clone()}


def train(tmp_path, callback, steps):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=steps,
                             per_device_train_batch_size=2, save_strategy="no",
                             logging_strategy="no", report_to="none", use_cpu=True,
                             disable_tqdm=True)
    trainer = Trainer(model=LlamaForCausalLM(config), args=args, train_dataset=Tokens(),
                      callbacks=[callback])
    trainer.train()
    return trainer


def checkpoints(path):
    return sorted(p.name for p in path.glob("checkpoint-*"))


def test_the_critical_level_saves_a_checkpoint_through_the_trainer(tmp_path):
    warned = []
    with pytest.warns(UserWarning, match="not read from a GPU"):
        callback = TrainerCallback(on_warn=warned.append, on_critical="save", gpus=[0],
                                   replay=CLIMB)
    trainer = train(tmp_path, callback, steps=5)
    # Scheduled saves are off: the only checkpoint is the one the critical level asked for, at
    # step 4 (78000 MiB), and training went on to the end.
    assert checkpoints(tmp_path) == ["checkpoint-4"]
    assert (tmp_path / "checkpoint-4" / "trainer_state.json").exists()
    assert trainer.state.global_step == 5
    assert [c["used_bytes"] for c in warned] == [70000 * MIB]


def test_stop_saves_and_ends_training(tmp_path):
    with pytest.warns(UserWarning):
        callback = TrainerCallback(on_warn="log", on_critical="stop", gpus=[0], replay=CLIMB)
    trainer = train(tmp_path, callback, steps=8)
    assert checkpoints(tmp_path) == ["checkpoint-4"]
    assert trainer.state.global_step == 4


def test_without_a_level_reached_nothing_is_saved(tmp_path):
    with pytest.warns(UserWarning):
        callback = TrainerCallback(gpus=[0], replay=CLIMB, warn="90%", critical="99%")
    train(tmp_path, callback, steps=5)
    assert checkpoints(tmp_path) == []


def test_a_bad_action_is_named():
    with pytest.raises(ValueError, match="invalid on_critical"):
        TrainerCallback(on_critical="panic", replay=CLIMB)
