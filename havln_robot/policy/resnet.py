"""ResNet-50 backbones with the parameter names of the checkpoints the CMA layout was trained with.

torchvision cannot be imported on the robot image, so both backbones are written here:

* :class:`TorchvisionResNet50` -- ImageNet ResNet-50 v1.5 (stride on the 3x3 conv, BatchNorm) as the
  ``nn.Sequential`` of torchvision's children that VLN-CE's ``TorchVisionResNet50`` keeps with
  ``spatial_output=True``: keys ``0`` (conv1), ``1`` (bn1), ``4``..``7`` (layer1..4, each
  ``N.conv1/bn1/conv2/bn2/conv3/bn3/downsample.0/1``); no ``fc`` (He et al., CVPR 2016; torchvision
  ``models/resnet.py``). Checkpoints with torchvision's names (``conv1``, ``layer1``, ...) are renamed
  on load by :func:`havln_robot.policy.checkpoint.map_legacy_keys`.
* :class:`DDPPOResNetEncoder` -- the DD-PPO depth encoder of habitat-baselines
  (``rl/ddppo/policy/resnet.py`` + ``resnet_policy.ResNetEncoder``): GroupNorm bottlenecks whose
  branch is ``convs.0..7``, stem ``conv1.0/1``, then a ``compression`` 3x3 conv + GroupNorm(1) to
  2048 / (final spatial)^2 channels (Wijmans et al., ICLR 2020).

Both take channels-first float tensors; shapes are documented per class.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class TVBottleneck(nn.Module):
    """torchvision ``Bottleneck`` (expansion 4, stride on ``conv2``), BatchNorm."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


#: Child index -> torchvision ``ResNet`` attribute name in the released RGB backbone. VLN-CE's
#: ``TorchVisionResNet`` (``vlnce_baselines/models/encoders/resnet_encoders.py``, used by HA-VLN's
#: ``agent/VLN-CE``) builds ``nn.Sequential(*list(resnet50.children())[:-1])`` (drops ``fc``), then with
#: ``spatial_output`` and ``single_spatial_filter`` drops ``avgpool`` the same way and appends a
#: parameter-free ``avgpool`` (4x4 adaptive average pool). Indices 2 (relu) and 3 (maxpool) hold no state.
TORCHVISION_CHILDREN: dict[int, str] = {
    0: "conv1",
    1: "bn1",
    2: "relu",
    3: "maxpool",
    4: "layer1",
    5: "layer2",
    6: "layer3",
    7: "layer4",
}


class SpatialAvgPool(nn.Module):
    """VLN-CE ``SpatialAvgPool``: adaptive average pool to 4x4; (B, C, H, W) -> (B, C, 4, 4). No state."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(x, (4, 4))


class TorchvisionResNet50(nn.Sequential):
    """ResNet-50 feature extractor in the released VLN-CE / HA-VLN-CMA layout (no ``fc``).

    An ``nn.Sequential`` of torchvision ``resnet50()``'s children ``conv1, bn1, relu, maxpool,
    layer1..layer4`` (indices 0..7, see :data:`TORCHVISION_CHILDREN`) followed by a parameter-free
    ``avgpool`` (:class:`SpatialAvgPool`), so state_dict keys are ``0.weight`` (conv1), ``1.*`` (bn1),
    ``4.N.conv1.weight`` ... ``7.N.downsample.1.running_var`` -- 318 entries.

    Input: (B, 3, H, W) float in [0, 1] (VLN-CE feeds ``rgb / 255``; ``MODEL.normalize_rgb = False``).
    Output: (B, 2048, 4, 4) ``layer4`` features pooled to 4x4.
    """

    def __init__(self, layers: tuple[int, int, int, int] = (3, 4, 6, 3)):
        stages, inplanes = [], 64
        for planes, blocks, stride in zip((64, 128, 256, 512), layers, (1, 2, 2, 2), strict=True):
            stage, inplanes = _tv_layer(inplanes, planes, blocks, stride)
            stages.append(stage)
        super().__init__(
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
            *stages,
        )
        self.avgpool = SpatialAvgPool()
        self.out_channels = 2048


def _tv_layer(inplanes: int, planes: int, blocks: int, stride: int) -> tuple[nn.Sequential, int]:
    """torchvision ``ResNet._make_layer`` for :class:`TVBottleneck`; returns (stage, output channels)."""
    downsample = None
    if stride != 1 or inplanes != planes * 4:
        downsample = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False), nn.BatchNorm2d(planes * 4))
    mods = [TVBottleneck(inplanes, planes, stride, downsample)]
    mods += [TVBottleneck(planes * 4, planes) for _ in range(1, blocks)]
    return nn.Sequential(*mods), planes * 4


class GNBottleneck(nn.Module):
    """DD-PPO GroupNorm bottleneck: ``convs`` = [1x1, GN, ReLU, 3x3(stride), GN, ReLU, 1x1, GN]."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, ngroups: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        out = planes * self.expansion
        self.convs = nn.Sequential(
            nn.Conv2d(inplanes, planes, 1, bias=False),
            nn.GroupNorm(ngroups, planes),
            nn.ReLU(True),
            nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False),
            nn.GroupNorm(ngroups, planes),
            nn.ReLU(True),
            nn.Conv2d(planes, out, 1, bias=False),
            nn.GroupNorm(ngroups, out),
        )
        self.relu = nn.ReLU(True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.convs(x) + identity)


class GNResNet(nn.Module):
    """DD-PPO ResNet (GroupNorm), module names ``conv1.0/1``, ``layer1..4``; total stride 32."""

    def __init__(self, in_channels: int, base_planes: int, ngroups: int, layers: tuple[int, int, int, int] = (3, 4, 6, 3)):
        super().__init__()
        self.conv1 = nn.Sequential(
            nn.Conv2d(in_channels, base_planes, 7, stride=2, padding=3, bias=False),
            nn.GroupNorm(ngroups, base_planes),
            nn.ReLU(True),
        )
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.inplanes = base_planes
        self.layer1 = self._make_layer(ngroups, base_planes, layers[0])
        self.layer2 = self._make_layer(ngroups, base_planes * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(ngroups, base_planes * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(ngroups, base_planes * 8, layers[3], stride=2)
        self.final_channels = self.inplanes
        self.final_spatial_compress = 1.0 / 2**5

    def _make_layer(self, ngroups: int, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * 4:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False), nn.GroupNorm(ngroups, planes * 4)
            )
        mods = [GNBottleneck(self.inplanes, planes, ngroups, stride, downsample)]
        self.inplanes = planes * 4
        mods += [GNBottleneck(self.inplanes, planes, ngroups) for _ in range(1, blocks)]
        return nn.Sequential(*mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.conv1(x))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


class DDPPOResNetEncoder(nn.Module):
    """habitat-baselines ``ResNetEncoder`` for a depth-only observation.

    Args:
        input_size: depth image side in pixels (256 in VLN-CE); the encoder halves it with an
            average pool first, so the backbone sees ``input_size / 2``.
        baseplanes: 32 and ngroups: 16 (VLN-CE ``VlnResnetDepthEncoder`` defaults, resnet50).

    Input: (B, 1, S, S) float depth in [0, 1]. Output: (B, C, s, s) with s = int(S/2/32)
    (4 for 256) and C = round(2048 / s^2) (128 for 256).
    """

    def __init__(self, input_size: int = 256, baseplanes: int = 32, ngroups: int = 16):
        super().__init__()
        spatial = input_size // 2
        self.running_mean_and_var = nn.Sequential()  # normalize_visual_inputs=False: no parameters
        self.backbone = GNResNet(1, baseplanes, ngroups)
        final_spatial = int(spatial * self.backbone.final_spatial_compress)
        channels = int(round(2048 / final_spatial**2))
        self.compression = nn.Sequential(
            nn.Conv2d(self.backbone.final_channels, channels, 3, padding=1, bias=False),
            nn.GroupNorm(1, channels),
            nn.ReLU(True),
        )
        self.output_shape = (channels, final_spatial, final_spatial)

    def forward(self, depth: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(depth, 2)
        x = self.running_mean_and_var(x)
        return self.compression(self.backbone(x))
